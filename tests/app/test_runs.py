"""Training runs through the API: real `python -m training.live` subprocesses with the test-only
tiny presets (seconds), the instructor token, bad input, faults, and the runs' model sets."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app

TOKEN = "teacher-token-123"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
REPO = Path(__file__).resolve().parents[2]


def settings(models_dir, data_dir, **kw) -> Settings:
    return Settings(models_dir=models_dir, data_dir=data_dir, instructor_token=TOKEN, run_test_presets=True, **kw)


@pytest.fixture(scope="module")
def corpus_text(tiny_corpus) -> str:
    text = "".join(p.read_text(encoding="utf-8") for p in sorted(tiny_corpus.glob("*.txt")))
    return text + "\nA line with [MASK] and [CLS] and <script>alert(1)</script> in it.\n"


@pytest.fixture(scope="module")
def app_client(tiny_models_dir, tmp_path_factory):
    data = tmp_path_factory.mktemp("data")
    with TestClient(create_app(settings(tiny_models_dir, data, max_corpus_bytes=60_000))) as c:
        yield c


@pytest.fixture(autouse=True)
def fresh_throttle(app_client):
    app_client.app.state.auth_throttle = None  # wrong-token delays do not carry over between tests


def parse_events(body: str) -> list[tuple[str, dict]]:
    """(event, data) pairs of a text/event-stream body; keep-alive comments skipped."""
    events = []
    for block in body.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n") if line and not line.startswith(":"))
        if "data" in fields:
            events.append((fields.get("event", "message"), json.loads(fields["data"])))
    return events


def wait_for(client, run_id, statuses, timeout=120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = client.get(f"/api/runs/{run_id}").json()
        if run["status"] in statuses:
            return run
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} still {run['status']}")


def test_students_cannot_start_cancel_or_delete(app_client, standing_clock):
    body = {"preset": "tiny"}
    r = app_client.post("/api/runs", json=body)
    assert r.status_code == 401 and r.json()["parameter"] == "token"
    answers = [app_client.post("/api/runs", json=body, headers={"Authorization": f"Bearer guess-{i}"})
               for i in range(14)]
    statuses = [a.status_code for a in answers]
    assert statuses == [403] * 10 + [429] * 4, statuses  # a burst of 10, then the budget is spent
    assert int(answers[-1].headers["retry-after"]) >= 1 and answers[-1].json()["parameter"] == "token"
    app_client.app.state.auth_throttle = None
    assert app_client.post("/api/runs", json=body, cookies={"pp_instructor": "forged"}).status_code == 403
    assert app_client.delete("/api/runs/r-20260101-000000-abcd").status_code == 401
    assert app_client.get("/api/runs").json()["runs"] == []  # nothing started
    missing = app_client.get("/api/runs/r-20260101-000000-abcd/events")
    assert missing.status_code == 404 and missing.json()["parameter"] == "run_id"


def test_browser_login_sets_a_strict_cookie_and_keeps_the_token_out_of_urls(app_client):
    assert TOKEN not in app_client.get("/login").text
    assert app_client.post("/login", data={"token": "nope-nope"}, follow_redirects=False).status_code == 403
    r = app_client.post("/login", data={"token": TOKEN}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/teach"
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and TOKEN.lower() not in cookie
    session = r.cookies["pp_instructor"]
    # a cross-site page cannot use the cookie; this site's own page can (then the body is checked)
    cross = app_client.post("/api/runs", json={"minutes": 99}, cookies={"pp_instructor": session},
                            headers={"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
    assert cross.status_code == 403
    own = app_client.post("/api/runs", json={"minutes": 99}, cookies={"pp_instructor": session},
                          headers={"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"})
    assert own.status_code == 422 and own.json()["parameter"] == "minutes"
    app_client.cookies.clear()


@pytest.mark.parametrize("body, status, parameter, says", [
    ({"corpus": ""}, 422, "corpus", "empty"),
    ({"corpus": "Too short. " * 50}, 422, "corpus", "at least 2,000"),
    ({"corpus": "x" * 60_001}, 413, "corpus", "60,000 bytes"),
    ({"corpus": "ab\x00cd" * 1000}, 422, "corpus", "binary"),
    ({"corpus": "\ufffd\ufffd text " * 500}, 422, "corpus", "UTF-8"),
    ({"minutes": 0.1}, 422, "minutes", "minutes"),
    ({"minutes": 31}, 422, "minutes", "minutes"),
    ({"preset": "huge"}, 422, "preset", "preset"),
    ({"families": []}, 422, "families", "families"),
    ({"families": ["gpt", "llama"]}, 422, "families", "families"),
])
def test_bad_input_is_refused_naming_the_parameter(app_client, body, status, parameter, says):
    r = app_client.post("/api/runs", json={"preset": "tiny", **body}, headers=AUTH)
    assert r.status_code == status, r.json()
    assert r.json()["parameter"] == parameter and says in r.json()["detail"]
    assert app_client.get("/api/runs").json()["active"] is None


@pytest.mark.slow
def test_a_run_trains_streams_and_its_models_are_playable(app_client, corpus_text):
    r = app_client.post("/api/runs", json={"corpus": corpus_text, "name": "Our poems", "preset": "tiny"}, headers=AUTH)
    assert r.status_code == 202, r.json()
    run_id = r.json()["id"]
    assert r.headers["location"] == f"/api/runs/{run_id}"
    second = app_client.post("/api/runs", json={"preset": "tiny"}, headers=AUTH)
    assert second.status_code == 409 and run_id in second.json()["detail"]
    with app_client.stream("GET", f"/api/runs/{run_id}/events") as stream:  # ends with the run
        events = parse_events("".join(stream.iter_text()))
    kinds = [k for k, _ in events]
    assert kinds.index("start") < kinds.index("progress") < kinds.index("snapshot") < kinds.index("finished")
    assert events[-1][0] == "status" and events[-1][1]["status"] == "finished"
    # a late joiner gets the same history
    with app_client.stream("GET", f"/api/runs/{run_id}/events") as stream:
        again = parse_events("".join(stream.iter_text()))
    assert [e for e in again if e[0] != "status"] == [e for e in events if e[0] != "status"]
    run = app_client.get(f"/api/runs/{run_id}").json()
    assert run["status"] == "finished" and run["metrics"]["gpt"]["nats_per_char"] > 0
    assert "python -m training live" in run["commands"]["live"]
    # clients see relative names only: no server paths, no process ids
    data_dir = str(app_client.app.state.settings.data_dir)
    for text in (json.dumps(run), app_client.get("/api/runs").text, json.dumps(events)):
        assert data_dir not in text and str(REPO) not in text and '"pid"' not in text
    assert f"--out runs/{run_id}" in run["commands"]["live"]
    sets = {s["id"]: s for s in app_client.get("/api/models").json()["sets"]}
    assert sets[run_id]["kind"] == "run" and sets[run_id]["name"] == "Our poems · final"
    snaps = [i for i, s in sets.items() if s["kind"] == "snapshot" and s["run"] == run_id]
    assert f"{run_id}@0" in snaps and len(snaps) >= 3
    gen = app_client.post("/api/generate", json={"prompt": "Line ", "max_new_tokens": 20, "model": run_id, "seed": 1})
    assert gen.status_code == 200, gen.json()
    fill = app_client.post("/api/mask-fill", json={"text": "Line 3 speaks", "positions": [1], "model": f"{run_id}@0"})
    assert fill.status_code == 200, fill.json()
    # delete: the run and its model sets are gone
    assert app_client.delete(f"/api/runs/{run_id}", headers=AUTH).json()["status"] == "deleted"
    assert run_id not in {s["id"] for s in app_client.get("/api/models").json()["sets"]}
    assert app_client.post("/api/generate", json={"prompt": "a", "model": run_id}).status_code == 404


@pytest.mark.slow
def test_cancel_stops_at_once_and_keeps_finished_snapshots(app_client):
    run_id = app_client.post("/api/runs", json={"preset": "tiny-slow", "minutes": 5}, headers=AUTH).json()["id"]
    run = wait_for(app_client, run_id, ("running",))
    deadline = time.monotonic() + 60
    while not app_client.get(f"/api/runs/{run_id}").json()["progress"] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert app_client.delete(f"/api/runs/{run_id}", headers=AUTH).json()["status"] == "cancelling"
    run = wait_for(app_client, run_id, ("cancelled", "failed"), timeout=30)
    assert run["status"] == "cancelled" and run["reason"] == "cancelled by the instructor"
    with pytest.raises(ProcessLookupError):
        os.kill(app_client.app.state.runs.get(run_id)["pid"], 0)  # the CPU is free
    run_dir = Path(app_client.app.state.settings.data_dir) / "runs" / run_id
    assert not list(run_dir.rglob(".tmp-*")) and not (run_dir / "final").exists()
    app_client.delete(f"/api/runs/{run_id}", headers=AUTH)


@pytest.mark.slow
def test_a_killed_trainer_fails_with_the_reason_and_the_server_serves_on(app_client):
    run_id = app_client.post("/api/runs", json={"preset": "tiny-slow", "minutes": 5}, headers=AUTH).json()["id"]
    wait_for(app_client, run_id, ("running",))
    os.kill(app_client.app.state.runs.get(run_id)["pid"], signal.SIGKILL)
    run = wait_for(app_client, run_id, ("failed",), timeout=30)
    assert "SIGKILL" in run["reason"]
    assert app_client.get("/api/health").status_code == 200
    assert app_client.get("/api/runs").json()["active"] is None
    app_client.delete(f"/api/runs/{run_id}", headers=AUTH)


def fake_run(data: Path, models_dir: Path, run_id: str, status: str) -> Path:
    run_dir = data / "runs" / run_id
    snap = run_dir / "snapshots" / "step-000010"
    shutil.copytree(models_dir, snap)
    (run_dir / "snapshots" / ".tmp-step-000020").mkdir()  # half written when the server died
    run = {"id": run_id, "name": "Old run", "status": status, "created": time.time(), "settings": {"families": ["gpt", "bert"],
           "minutes": 1, "preset": None, "seed": 1, "threads": 1}, "corpus": {}, "progress": {}, "validation": {},
           "snapshots": [], "pid": None}
    (run_dir / "run.json").write_text(json.dumps(run))
    return run_dir


def test_restart_marks_interrupted_and_serves_the_finished_snapshots(tiny_models_dir, tmp_path):
    run_dir = fake_run(tmp_path, tiny_models_dir, "r-20260101-000000-abcd", "running")
    with TestClient(create_app(settings(tiny_models_dir, tmp_path))) as c:
        run = c.get("/api/runs/r-20260101-000000-abcd").json()
        assert run["status"] == "interrupted" and "server stopped" in run["reason"]
        assert not (run_dir / "snapshots" / ".tmp-step-000020").exists()
        r = c.post("/api/mask-fill", json={"text": "Line 3", "positions": [0], "model": "r-20260101-000000-abcd@10"})
        assert r.status_code == 200, r.json()


def test_storage_cap_unwritable_data_folder_and_missing_train_extra(tiny_models_dir, tmp_path, monkeypatch):
    fake_run(tmp_path, tiny_models_dir, "r-20260101-000000-abcd", "finished")
    with TestClient(create_app(settings(tiny_models_dir, tmp_path, max_runs=1))) as c:
        r = c.post("/api/runs", json={"preset": "tiny"}, headers=AUTH)
        assert r.status_code == 507 and "delete a run" in r.json()["detail"]
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with TestClient(create_app(settings(tiny_models_dir, blocker / "data"))) as c:
        r = c.post("/api/runs", json={"preset": "tiny"}, headers=AUTH)
        assert r.status_code == 503 and "not writable" in r.json()["detail"]
    import app.routers.runs as runs_router

    monkeypatch.setattr(runs_router, "training_available", lambda: False)
    with TestClient(create_app(settings(tiny_models_dir, tmp_path))) as c:
        r = c.post("/api/runs", json={"preset": "tiny"}, headers=AUTH)
        assert r.status_code == 503 and 'pip install -e ".[train]"' in r.json()["detail"]
        assert 'pip install -e ".[train]"' in c.get("/api/runs").json()["enable"]


def test_app_never_imports_torch_or_training():
    code = ("import sys, app.main, app.runs.manager, app.auth, app.routers.runs; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'training', 'onnx', 'onnxscript')]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


def test_without_a_token_the_server_makes_one_and_prints_a_login_url(monkeypatch, capsys):
    import uvicorn

    import app.__main__ as cli

    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: None)
    saved = dict(os.environ)  # cli.main hands settings to the workers through the environment
    try:
        for key in [k for k in os.environ if k.startswith("PLAYGROUND_")]:
            del os.environ[key]
        cli.main(["--port", "8123"])
        token = os.environ["PLAYGROUND_INSTRUCTOR_TOKEN"]
        out = capsys.readouterr().out
        assert f"http://127.0.0.1:8123/login#token={token}" in out and len(token) >= 24
        del os.environ["PLAYGROUND_INSTRUCTOR_TOKEN"]
        cli.main(["--instructor-token", "given-token-1"])
        assert os.environ["PLAYGROUND_INSTRUCTOR_TOKEN"] == "given-token-1"
        assert "login#token" not in capsys.readouterr().out
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.mark.slow
def test_workers_sharing_a_data_folder_train_one_run_at_a_time(tiny_models_dir, tmp_path):
    """Two workers = two managers on one folder: the second cannot start, can cancel the first's
    run, and serves its model sets after a scan."""
    from app.errors import ApiError
    from app.registry import Registry
    from app.runs import RunManager
    from app.runtime import Runtime

    s = settings(tiny_models_dir, tmp_path)
    a, b = RunManager(s, None), RunManager(s, Registry(Runtime()))
    run = a.start(None, "A's run", ["gpt"], 5.0, "tiny-slow", 1)
    with pytest.raises(ApiError) as refused:
        b.start(None, "B's run", ["gpt"], 5.0, "tiny", 1)
    assert refused.value.status == 409 and run["id"] in refused.value.detail
    deadline = time.monotonic() + 180  # the first snapshot (an ONNX export) takes over a minute on a busy machine
    while not list((tmp_path / "runs" / run["id"]).glob("snapshots/step-*")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert list((tmp_path / "runs" / run["id"]).glob("snapshots/step-*")), "no snapshot landed"
    assert b.cancel_or_delete(run["id"])["status"] == "cancelling"
    deadline = time.monotonic() + 30  # its own wait
    while a.get(run["id"])["status"] not in ("cancelled", "failed") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert a.get(run["id"])["status"] == "cancelled"
    b.sync_registry()
    assert f"{run['id']}@0" in b.registry.ids()


def test_example_runs_shipped_with_the_models_are_served_read_only(tiny_models_dir, tmp_path):
    """models/runs/<id>/ (same shape as a class run) is listed and playable with no training."""
    models = tmp_path / "models"
    shutil.copytree(tiny_models_dir, models)
    run_dir = models / "runs" / "example-demo"
    shutil.copytree(tiny_models_dir, run_dir / "final")
    shutil.copytree(tiny_models_dir, run_dir / "snapshots" / "step-000007")
    (run_dir / "progress.jsonl").write_text(json.dumps({"event": "start", "t": 0.0}) + "\n")
    run = {"id": "example-demo", "name": "Demo", "status": "finished", "created": 1.0, "settings": {},
           "corpus": {}, "progress": {}, "validation": {}, "snapshots": [], "steps": {"gpt": 4, "bert": 3}}
    (run_dir / "run.json").write_text(json.dumps(run))
    with TestClient(create_app(settings(models, tmp_path / "data"))) as c:
        listed = c.get("/api/runs").json()["runs"]
        assert [(r["id"], r["shipped"]) for r in listed] == [("example-demo", True)]
        sets = {s["id"]: s for s in c.get("/api/models").json()["sets"]}
        assert sets["example-demo"]["kind"] == "run" and sets["example-demo@7"]["name"] == "Demo · step 7"
        r = c.post("/api/generate", json={"prompt": "the", "max_new_tokens": 3, "model": "example-demo@7"})
        assert r.status_code == 200 and len(r.json()["steps"]) == 3
        events = c.get("/api/runs/example-demo/events")
        assert events.status_code == 200 and "start" in events.text
        r = c.delete("/api/runs/example-demo", headers=AUTH)
        assert r.status_code == 409 and r.json()["parameter"] == "run_id"
        assert run_dir.is_dir()
