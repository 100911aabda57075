"""Issue 53 must 6: a bad record never stops the server.

Each malformed run.json or job.json of the issue (and a few more shapes) sits beside two good
records when the server starts: the app starts (its lifespan runs), the bad record is set aside
(renamed <record>.bad-<time>, one log line naming the file and what was wrong), the good ones are
listed, and GET /api/runs and GET /api/finetunes answer 200. A second start keeps the set-aside
file (it is not an orphan folder to clean)."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from tests.conftest import SHIPPED_MODELS

EXAMPLE_RUN = json.loads((SHIPPED_MODELS / "runs" / "example-shakespeare-3min" / "run.json").read_text())
GOOD_RUNS = ("r-20260101-000000-aaaa", "r-20260102-000000-bbbb")
GOOD_JOBS = ("f-20260101-000000-aaaa", "f-20260102-000000-bbbb")
BAD_RUN, BAD_JOB = "r-20260103-000000-cccc", "f-20260103-000000-cccc"


def good_run(run_id: str, created: float) -> dict:
    return {**EXAMPLE_RUN, "id": run_id, "name": f"run {run_id[-4:]}", "created": created}


def good_job(job_id: str, created: float) -> dict:
    return {"id": job_id, "status": "finished", "created": created, "started": created, "ended": created + 1,
            "reason": None, "settings": {"model": "bert", "task_label": "sentiment", "arms": ["head"], "sizes": [8],
                                         "seeds": 1, "threads": 1}, "pid": None, "exit_code": None}


BAD_RUNS = {
    "created is text": lambda: {**good_run(BAD_RUN, 3.0), "created": "x"},
    "created is null": lambda: {**good_run(BAD_RUN, 3.0), "created": None},
    "settings is text": lambda: {**good_run(BAD_RUN, 3.0), "settings": "x"},
    "a list": lambda: [],
    "no id": lambda: {k: v for k, v in good_run(BAD_RUN, 3.0).items() if k != "id"},
    "not JSON": lambda: "{",
}
BAD_JOBS = {
    "only a status": lambda: {"status": 5},
    "a list": lambda: [],
    "created is null": lambda: {**good_job(BAD_JOB, 3.0), "created": None},
    "settings is a list": lambda: {**good_job(BAD_JOB, 3.0), "settings": []},
    "no task label": lambda: {**good_job(BAD_JOB, 3.0), "settings": {"model": "bert"}},
    "not JSON": lambda: "{",
}


def write(folder: Path, name: str, record) -> Path:
    folder.mkdir(parents=True)
    path = folder / name
    path.write_text(record if isinstance(record, str) else json.dumps(record))
    return path


def stored(data: Path, bad_run=None, bad_job=None) -> tuple[Path | None, Path | None]:
    for k, run_id in enumerate(GOOD_RUNS):
        write(data / "runs" / run_id, "run.json", good_run(run_id, float(k + 1)))
    for k, job_id in enumerate(GOOD_JOBS):
        write(data / "finetunes" / job_id, "job.json", good_job(job_id, float(k + 1)))
    run = write(data / "runs" / BAD_RUN, "run.json", bad_run) if bad_run is not None else None
    job = write(data / "finetunes" / BAD_JOB, "job.json", bad_job) if bad_job is not None else None
    return run, job


def serve_and_list(data: Path) -> tuple[list[str], list[str]]:
    app = create_app(Settings(models_dir=SHIPPED_MODELS, data_dir=data, instructor_token="bad-records-token"))
    with TestClient(app) as client:  # the lifespan runs: startup settles and lists every job
        runs, jobs = client.get("/api/runs"), client.get("/api/finetunes")
        assert runs.status_code == 200, runs.text
        assert jobs.status_code == 200, jobs.text
        assert client.get(f"/api/runs/{BAD_RUN}").status_code == 404
        assert client.get(f"/api/finetunes/{BAD_JOB}").status_code == 404
        return [r["id"] for r in runs.json()["runs"]], [j["id"] for j in jobs.json()["finetunes"]]


def assert_set_aside(path: Path, caplog) -> None:
    assert not path.exists()
    aside = list(path.parent.glob(f"{path.name}.bad-*"))
    assert len(aside) == 1, aside
    lines = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
    assert len(lines) == 1 and aside[0].name in lines[0], lines


@pytest.mark.parametrize("what", list(BAD_RUNS))
def test_a_bad_run_record_is_set_aside_and_the_rest_served(tmp_path, caplog, what):
    caplog.set_level(logging.WARNING, logger="app")
    bad, _ = stored(tmp_path, bad_run=BAD_RUNS[what]())
    runs, jobs = serve_and_list(tmp_path)
    assert sorted(runs) == ["example-shakespeare-3min", *GOOD_RUNS] and jobs == list(reversed(GOOD_JOBS))
    assert_set_aside(bad, caplog)
    serve_and_list(tmp_path)  # a second start: the set-aside record is kept, not cleaned as an orphan
    assert len(list(bad.parent.glob("run.json.bad-*"))) == 1


@pytest.mark.parametrize("what", list(BAD_JOBS))
def test_a_bad_finetune_record_is_set_aside_and_the_rest_served(tmp_path, caplog, what):
    caplog.set_level(logging.WARNING, logger="app")
    _, bad = stored(tmp_path, bad_job=BAD_JOBS[what]())
    runs, jobs = serve_and_list(tmp_path)
    assert jobs == list(reversed(GOOD_JOBS)) and sorted(runs) == ["example-shakespeare-3min", *GOOD_RUNS]
    assert_set_aside(bad, caplog)
    serve_and_list(tmp_path)
    assert len(list(bad.parent.glob("job.json.bad-*"))) == 1


@pytest.mark.parametrize("kept", ['{"a": null}', '{"a": []}'])
def test_a_bad_sessions_file_never_locks_the_teacher_out(tmp_path, kept):
    """DATA_DIR/sessions.json (the logged-in browsers) of the wrong shape: logins made before are
    gone, but the teacher logs in and the new cookie works (it was a 500 on every login)."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "sessions.json").write_text(kept)
    app = create_app(Settings(models_dir=SHIPPED_MODELS, data_dir=tmp_path, instructor_token="bad-records-token"))
    own = {"Sec-Fetch-Site": "same-origin"}
    with TestClient(app) as client:
        client.cookies.set("pp_instructor", "from-before")
        stale = client.get("/api/sessions", headers=own)
        assert stale.status_code == 403, stale.text
        client.cookies.clear()
        login = client.post("/login", data={"token": "bad-records-token"}, headers=own, follow_redirects=False)
        assert login.status_code == 303, login.text
        client.cookies.set("pp_instructor", login.cookies["pp_instructor"])
        assert client.get("/api/sessions", headers=own).status_code == 200
