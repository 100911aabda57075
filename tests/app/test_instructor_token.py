"""The instructor login survives a restart (issue 25): `python -m app` keeps its token in the data
folder, readable by the owner only, and makes a new one only when there is none or when asked
(--new-instructor-token), so a teacher's page does not answer 403 mid-lesson after a restart."""
from __future__ import annotations

import os
import re
import stat

import pytest

import app.__main__ as cli
from app.auth import TOKEN_FILE, kept_token

# every budget here runs on a standing clock (tests/conftest.py): no test depends on the machine's speed
pytestmark = pytest.mark.usefixtures("standing_clock")


@pytest.fixture(autouse=True)
def clean_environment():
    saved = dict(os.environ)
    for key in [k for k in os.environ if k.startswith("PLAYGROUND_")]:
        del os.environ[key]
    yield
    os.environ.clear()
    os.environ.update(saved)


def start(monkeypatch, capsys, *argv) -> tuple[str, str]:
    """(the token the workers get, what the terminal printed) of one `python -m app` start."""
    monkeypatch.setattr("uvicorn.run", lambda *a, **k: None)
    for key in [k for k in os.environ if k.startswith("PLAYGROUND_")]:
        del os.environ[key]
    cli.main(list(argv))
    return os.environ["PLAYGROUND_INSTRUCTOR_TOKEN"], capsys.readouterr().out


def test_a_restart_keeps_the_token_and_a_new_one_only_when_asked(monkeypatch, capsys, tmp_path):
    first, said = start(monkeypatch, capsys, "--data-dir", str(tmp_path))
    path = tmp_path / TOKEN_FILE
    assert path.read_text().strip() == first and f"/login#token={first}" in said and "a new one" in said
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # the owner's only
    again, said = start(monkeypatch, capsys, "--data-dir", str(tmp_path))
    assert again == first and "--new-instructor-token makes a new one" in said
    renewed, said = start(monkeypatch, capsys, "--data-dir", str(tmp_path), "--new-instructor-token")
    assert renewed != first and path.read_text().strip() == renewed
    # a token given on the command line is used as it is and the kept one is left alone
    given, said = start(monkeypatch, capsys, "--data-dir", str(tmp_path), "--instructor-token", "given-token-123")
    assert given == "given-token-123" and path.read_text().strip() == renewed and "/login#token=" not in said


def test_a_loose_file_is_tightened_and_a_folder_that_cannot_hold_it_still_serves(tmp_path):
    token, made, unsaved = kept_token(tmp_path)
    assert made and unsaved is None
    path = tmp_path / TOKEN_FILE
    path.chmod(0o644)
    assert kept_token(tmp_path) == (token, False, None) and stat.S_IMODE(path.stat().st_mode) == 0o600
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    fresh, made, unsaved = kept_token(blocked)  # the data folder is a file: this start gets a token of its own
    assert made and len(fresh) >= 16 and unsaved


def test_a_token_file_that_is_not_utf8_is_replaced_with_a_new_token(monkeypatch, capsys, tmp_path):
    path = tmp_path / TOKEN_FILE
    path.write_bytes(b"\xff\xfe not a token \x80\x81")  # e.g. a file copied over it by mistake
    token, said = start(monkeypatch, capsys, "--data-dir", str(tmp_path))
    assert len(token) >= 16 and path.read_text(encoding="utf-8").strip() == token
    assert "a new one" in said and "Traceback" not in said
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_lone_surrogate_in_the_login_json_is_a_400_counted_as_a_guess(tmp_path, caplog):
    import logging

    from fastapi.testclient import TestClient

    from app.auth import GUESS_BURST
    from app.config import Settings
    from app.main import create_app
    from tests.conftest import SHIPPED_MODELS

    application = create_app(Settings(models_dir=SHIPPED_MODELS, data_dir=tmp_path, instructor_token="the-token-1234"))
    with TestClient(application, client=("127.0.0.9", 5000)) as c:
        caplog.clear()
        with caplog.at_level(logging.INFO):
            r = c.post("/login", content=b'{"token":"\\ud800"}', headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and r.json()["parameter"] == "token", r.text
        assert "surrogate" in r.json()["detail"]
        assert not [rec for rec in caplog.records if rec.exc_info] and "Traceback" not in caplog.text
        assert len([rec for rec in caplog.records if rec.levelno >= logging.WARNING]) <= 1
        statuses = [c.post("/login", content=b'{"token":"x\\udfffy"}', headers={"Content-Type": "application/json"}
                           ).status_code for _ in range(GUESS_BURST + 2)]
        assert statuses[:GUESS_BURST - 1] == [400] * (GUESS_BURST - 1) and statuses[-1] == 429
        # the right token from another address still works
        other = TestClient(application, client=("127.0.0.10", 5000), follow_redirects=False)
        assert other.post("/login", json={"token": "the-token-1234"}).status_code == 303


@pytest.mark.parametrize("junk", [b"\x00" * 64, b"  \t\n", "ab cd ef gh ij kl mn op".encode(), b"\x1b[31m" * 8])
def test_a_token_file_that_holds_no_token_of_ours_is_replaced(monkeypatch, capsys, tmp_path, junk):
    """A crash can leave a file of NUL bytes (issue 43): valid UTF-8 but no token this code writes, and
    an environment variable cannot carry a NUL, so the server must replace it, not stop."""
    path = tmp_path / TOKEN_FILE
    path.write_bytes(junk)
    token, said = start(monkeypatch, capsys, "--data-dir", str(tmp_path))
    assert re.fullmatch(r"[A-Za-z0-9_-]{16,}", token)  # one of ours: URL-safe, as new_token writes
    assert path.read_text(encoding="utf-8").strip() == token and "(a new one, kept in" in said


def test_a_token_that_could_not_be_kept_is_not_said_to_be_kept(monkeypatch, capsys, tmp_path):
    """`instructor_token` is a folder (issue 53): the start gets a token of its own, and the line says it
    was not kept (a restart makes another and logs every browser out), not that it is kept there."""
    (tmp_path / TOKEN_FILE).mkdir()
    token, said = start(monkeypatch, capsys, "--data-dir", str(tmp_path))
    assert re.fullmatch(r"[A-Za-z0-9_-]{16,}", token) and f"/login#token={token}" in said
    assert "kept in" not in said and "not kept" in said and "for this start only" in said, said
    assert (tmp_path / TOKEN_FILE).is_dir() and [p.name for p in tmp_path.iterdir()] == [TOKEN_FILE]  # nothing left
