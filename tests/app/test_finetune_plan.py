"""No claim without the data to carry it, through the API (issue 42 must 2): POST /api/finetune-plan
says before Start which sizes the trainer will skip (its words) and whether the test part can carry
a comparison; a job keeps that plan; the 6-line class hand-off's summary compares nothing and its
headline has no "survives the correction"."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.contract.finetune_evidence import evidence
from app.main import create_app

TOKEN = "plan-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
REPO = Path(__file__).resolve().parents[2]
LINES = ["What a lovely day", "I lost my keys again", "The cake was wonderful", "It rained all week",
         "A fine walk by the sea", "The bus never came"]


def six_lines() -> str:
    """A class session's pooled labels (GET /api/sessions/{code}/labels.jsonl): 6 lines, 3 of each label."""
    return "".join(json.dumps({"text": t, "label": "happy" if i % 2 == 0 else "sad"}) + "\n" for i, t in enumerate(LINES))


def trainer_has_finetune() -> bool:
    try:
        return subprocess.run([sys.executable, "-m", "training", "finetune", "--list-tasks"], cwd=REPO,
                              capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@pytest.fixture(scope="module")
def client(tiny_models_dir, tmp_path_factory):
    settings = Settings(models_dir=tiny_models_dir, data_dir=tmp_path_factory.mktemp("data"), instructor_token=TOKEN,
                        run_threads=1)
    with TestClient(create_app(settings)) as c:  # no step timing here (tests/app/test_finetune_estimate.py times it)
        c.app.state.finetunes.step_times.command = lambda folder, task: [sys.executable, "-c", "print('{}')"]
        yield c


@pytest.fixture(autouse=True)
def fresh_throttle(client):
    client.app.state.auth_throttle = None


def test_the_plan_of_the_six_line_hand_off_says_what_will_be_skipped_and_that_nothing_is_compared(client):
    r = client.post("/api/finetune-plan", json={"task_text": six_lines(), "sizes": [8, 32, 128, "all"]}, headers=AUTH)
    assert r.status_code == 200, r.json()
    p = r.json()
    assert (p["kind"], p["n_train"], p["n_test"], p["sizes"]) == ("sequence", 4, 2, ["all"])
    assert [(s["size"], s["why"]) for s in p["skipped"]] == [
        (n, "more than the 4 labelled training examples there are ('all' runs every one of them)") for n in (8, 32, 128)]
    assert p["evidence"] == evidence("sequence", 2) and p["evidence"]["enough"] is False
    assert "too few to compare two arms" in p["evidence"]["text"] and "at least 20 test texts" in p["evidence"]["text"]


def test_a_shipped_task_can_carry_comparisons(client):
    r = client.post("/api/finetune-plan", json={"task": "spaces", "sizes": [2, 32, "all"]}, headers=AUTH)
    assert r.status_code == 200, r.json()
    p = r.json()
    assert p["kind"] == "token" and p["n_test"] >= 20 and p["rare"] >= 10 and p["evidence"]["enough"] is True
    assert p["sizes"] == [2, 32, "all"] and p["skipped"] == []


@pytest.mark.parametrize("body, status, parameter", [
    ({"task_text": six_lines()}, 401, "token"),
    ({"task": "spaces", "task_text": six_lines()}, 422, "task"),
    ({}, 422, "task"),
    ({"task": "no-such-task"}, 422, "task"),
    ({"task_text": '{"text": "no label"}\n'}, 422, "task_text"),
    ({"task": "spaces", "sizes": [0]}, 422, "sizes"),
    ({"task": "spaces", "colour": "red"}, 422, "colour"),
])
def test_bad_input_names_the_field(client, body, status, parameter):
    r = client.post("/api/finetune-plan", json=body, headers={} if status == 401 else AUTH)
    assert r.status_code == status, r.json()
    assert r.json()["parameter"] == parameter, r.json()


@pytest.mark.slow
@pytest.mark.skipif(not trainer_has_finetune(), reason="python -m training finetune is not in this checkout")
def test_the_six_line_hand_off_keeps_its_plan_and_claims_nothing(client):
    model = client.get("/api/models").json()["default"]
    body = {"model": model, "task_text": six_lines(), "task_name": "class ABC-123 labels", "steps": 3, "seeds": 2,
            "arms": ["readout", "full", "probe", "scratch", "ngram"], "sizes": [8, 32, 128, "all"]}
    r = client.post("/api/finetunes", json=body, headers=AUTH)
    assert r.status_code == 202, r.json()
    job_id = r.json()["id"]
    assert r.json()["settings"]["plan"]["evidence"]["enough"] is False  # kept with the job: said while it runs
    with client.stream("GET", f"/api/finetunes/{job_id}/events") as stream:  # ends with the job
        "".join(stream.iter_text())
    job = client.get(f"/api/finetunes/{job_id}").json()
    assert job["status"] == "finished", (job["reason"], job["error"])
    final = job["final"]
    assert final["evidence"] == evidence("sequence", 2) == job["settings"]["plan"]["evidence"]
    assert "survive" not in final["headline"]["text"] and final["headline"]["comparisons"] == []
    assert final["headline"]["text"].startswith(final["evidence"]["text"]) and "LP-FT" in final["headline"]["text"]
    assert [s["why"] for s in job["start"]["skipped"] if "size" in s] == [s["why"] for s in job["settings"]["plan"]["skipped"]]
    client.delete(f"/api/finetunes/{job_id}", headers=AUTH)
