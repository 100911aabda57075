"""app/__main__.py and app/config.py: command line, environment, defaults."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import app.__main__ as cli
from app.config import REPO, Settings


@pytest.fixture(autouse=True)
def clean_environment():
    """cli.main writes PLAYGROUND_* variables (for the workers): keep them out of other tests."""
    saved = dict(os.environ)
    for key in [k for k in os.environ if k.startswith("PLAYGROUND_")]:
        del os.environ[key]
    yield
    os.environ.clear()
    os.environ.update(saved)


def test_defaults():
    s = Settings()
    assert (s.host, s.port, s.workers, s.threads, s.max_body_bytes) == ("127.0.0.1", 8000, 1, 1, 65536)
    assert s.models_dir == REPO / "models"


def test_environment_uses_the_prefix(monkeypatch):
    monkeypatch.setenv("PLAYGROUND_PORT", "9001")
    monkeypatch.setenv("PLAYGROUND_THREADS", "2")
    assert (Settings().port, Settings().threads) == (9001, 2)


def test_command_line_overrides_environment_and_reaches_uvicorn(monkeypatch, tmp_path):
    import uvicorn

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda target, **kw: calls.append((target, kw)))
    monkeypatch.setenv("PLAYGROUND_PORT", "9001")
    cli.main(["--port", "8123", "--workers", "2", "--threads", "3", "--models-dir", str(tmp_path)])
    [(target, kw)] = calls
    assert target == "app.main:create_app" and kw["factory"] is True
    assert (kw["host"], kw["port"], kw["workers"]) == ("127.0.0.1", 8123, 2)
    # every worker builds its app from the environment, so the options must be there
    s = Settings()
    assert (s.threads, s.models_dir, s.port) == (3, Path(tmp_path).resolve(), 8123)


def test_bad_option_values_are_refused(monkeypatch):
    with pytest.raises(SystemExit):
        cli.parse_args(["--port", "eighty"])
    monkeypatch.setattr("uvicorn.run", lambda *a, **k: pytest.fail("should not start"))
    with pytest.raises(SystemExit, match="workers"):
        cli.main(["--workers", "0"])


def test_serving_never_imports_torch_or_training():
    """The server installs without torch: importing every app module must not pull it in."""
    import subprocess
    import sys

    code = ("import sys, pkgutil, importlib, app, app.main, app.__main__; [importlib.import_module(m.name) for m in pkgutil.walk_packages(app.__path__, 'app.')]; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'training')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 0, r.stdout + r.stderr


def test_uvicorn_gets_the_guarded_protocol_and_no_proxy_trust_by_default(monkeypatch):
    import uvicorn

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda target, **kw: calls.append(kw))
    cli.main([])
    assert calls[-1]["http"] == "app.protocol:GuardedProtocol"
    assert calls[-1]["proxy_headers"] is False  # X-Forwarded-* from a client are not believed
    cli.main(["--forwarded-allow-ips", "10.0.0.1", "--allowed-hosts", "playground.lan,other.lan",
              "--body-timeout", "5", "--header-timeout", "3", "--send-timeout", "20"])
    assert calls[-1]["proxy_headers"] is True and calls[-1]["forwarded_allow_ips"] == "10.0.0.1"
    s = Settings()
    assert s.allowed_hosts == ["playground.lan", "other.lan"]
    assert (s.body_timeout_s, s.header_timeout_s, s.send_timeout_s) == (5, 3, 20)


def test_the_guarded_protocol_reads_its_timeouts_from_the_settings(monkeypatch):
    from app import protocol

    monkeypatch.setenv("PLAYGROUND_HEADER_TIMEOUT_S", "4")
    monkeypatch.setenv("PLAYGROUND_SEND_TIMEOUT_S", "7")
    protocol._timeouts.cache_clear()
    try:
        assert protocol._timeouts() == (4.0, 7.0)
    finally:
        protocol._timeouts.cache_clear()
