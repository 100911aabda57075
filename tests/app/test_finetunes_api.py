"""Fine-tuning through the API, end to end: real `python -m training finetune` subprocesses on the
tiny test models (seconds: a few steps each), the instructor token, bad input naming the field,
the events stream, the job's numbers, and the exported classifiers served by /api/classify."""
from __future__ import annotations

import json
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


def trainer_has_finetune() -> bool:
    try:
        return subprocess.run([sys.executable, "-m", "training", "finetune", "--list-tasks"], cwd=REPO,
                              capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


needs_trainer = pytest.mark.skipif(not trainer_has_finetune(),
                                   reason="python -m training finetune is not in this checkout yet")


def task_text(kind: str = "sequence", n: int = 40) -> str:
    rows = []
    for i in range(n):
        if kind == "sequence":
            good = i % 2 == 0
            text = f"Line {i} speaks of {'the king and the crown' if good else 'a ship upon the sea'}"
            rows.append({"text": text, "label": "king" if good else "sea", **({"split": "test"} if i >= n - 10 else {})})
        else:
            text = f"the king {i} speaks. a ship sails."
            tags = "".join("1" if j == 0 or text[j - 2:j] == ". " else "0" for j in range(len(text)))
            rows.append({"text": text, "tags": tags})
    return "\n".join(json.dumps(r) for r in rows) + "\n"


BASE = {"arms": ["readout", "full", "probe", "scratch", "ngram"], "sizes": [4, "all"], "seeds": 2, "steps": 8}


@pytest.fixture(scope="module")
def app_client(tiny_models_dir, tmp_path_factory):
    settings = Settings(models_dir=tiny_models_dir, data_dir=tmp_path_factory.mktemp("data"), instructor_token=TOKEN,
                        run_threads=1)
    with TestClient(create_app(settings)) as c:
        yield c


@pytest.fixture(autouse=True)
def fresh_throttle(app_client):
    app_client.app.state.auth_throttle = None


@pytest.fixture(scope="module")
def base(app_client) -> dict:
    """A grid of 5 arms x 2 sizes x 2 seeds, a few steps each, from the tiny shipped-like BERT."""
    return {**BASE, "model": app_client.get("/api/models").json()["default"]}


def parse_events(body: str) -> list[tuple[str, dict]]:
    events = []
    for block in body.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n") if line and not line.startswith(":"))
        if "data" in fields:
            events.append((fields.get("event", "message"), json.loads(fields["data"])))
    return events


def test_students_cannot_start_or_delete(app_client, base):
    body = {**base, "task_text": task_text()}
    r = app_client.post("/api/finetunes", json=body)
    assert r.status_code == 401 and r.json()["parameter"] == "token"
    assert app_client.post("/api/finetunes", json=body, headers={"Authorization": "Bearer guess-1"}).status_code == 403
    assert app_client.delete("/api/finetunes/f-20260101-000000-abcd").status_code == 401
    assert app_client.get("/api/finetunes").json()["finetunes"] == []
    missing = app_client.get("/api/finetunes/f-20260101-000000-abcd/events")
    assert missing.status_code == 404 and missing.json()["parameter"] == "finetune_id"


BAD_LINE = task_text().splitlines()
BAD_LINE[2] = '{"text": "no label here"}'


@pytest.mark.parametrize("body, status, parameter, says", [
    ({"model": "nope"}, 404, "model", "no model set"),
    ({"task": "no-such-task", "task_text": None}, 422, "task", "task must be one of"),
    ({"task": "x", "task_text": "y"}, 422, "task", "exactly one"),
    ({"task_text": None}, 422, "task", "exactly one"),
    ({"task_text": "\n".join(BAD_LINE)}, 422, "task_text", "line 3"),
    ({"task_text": "{oops\n"}, 422, "task_text", "line 1"),
    ({"arms": ["full", "lora"]}, 422, "arms", "arms"),
    ({"arms": []}, 422, "arms", "arms"),
    ({"sizes": [0]}, 422, "sizes", "sizes"),
    ({"sizes": ["most"]}, 422, "sizes", "sizes"),
    ({"seeds": 0}, 422, "seeds", "seeds"),
    ({"seeds": 11}, 422, "seeds", "seeds"),
    ({"steps": -1}, 422, "steps", "steps"),
    ({"snapshots": True}, 422, "snapshots", "training run"),
    ({"colour": "red"}, 422, "colour", "not a parameter"),
    # issue 42 must 1: a readout in the table's vocabulary that fits the task, or a 422 naming `readout`
    ({"readout": {"masked": "sideways"}}, 422, "readout", "\"other\" or \"upper\""),
    ({"readout": {"masked": "other"}}, 422, "readout", "per-character"),
    ({"readout": {"gpt": "castle"}}, 422, "readout", "'castle'"),
    ({"readout": "sometimes"}, 422, "readout", "none"),
    ({"readout": ["gpt"]}, 422, "readout", "readout"),
    ({"task": "spaces", "task_text": None, "readout": {"gpt": "1"}}, 422, "readout", "whole-input"),
    ({"task_text": '{"readout": {"gpt": "castle"}}\n' + task_text()}, 422, "task_text", "line 1: field 'readout'"),
    # issue 53 must 8: the task's name is shown in pickers and lists as a run's name is, under the same rule
    ({"task_name": "king \u202e sea"}, 422, "task_name", "U+202E"),
    ({"task_name": "king\nsea"}, 422, "task_name", "U+000A"),
    ({"task_name": "\u200b"}, 422, "task_name", "U+200B"),
    ({"task_name": "   "}, 422, "task_name", "only spaces"),
    # and a readout reads characters a text can hold: no NUL, no control or invisible formatting characters
    ({"task": "spaces", "task_text": None, "readout": {"insert": "\u0000"}}, 422, "readout", "U+0000"),
    ({"task": "spaces", "task_text": None, "readout": {"insert": " \u202e"}}, 422, "readout", "U+202E"),
    ({"task_text": '{"readout": {"insert": "\\u0000"}}\n' + task_text("token")}, 422, "task_text", "U+0000"),
])
def test_bad_input_is_refused_naming_the_field(app_client, base, body, status, parameter, says):
    r = app_client.post("/api/finetunes", json={**base, "task_text": task_text(), **body}, headers=AUTH)
    assert r.status_code == status, r.json()
    assert r.json()["parameter"] == parameter and says in r.json()["detail"], r.json()
    assert app_client.get("/api/finetunes").json()["active"] is None


def run_to_end(client, body) -> tuple[dict, list]:
    r = client.post("/api/finetunes", json=body, headers=AUTH)
    assert r.status_code == 202, r.json()
    job_id = r.json()["id"]
    assert r.headers["location"] == f"/api/finetunes/{job_id}"
    with client.stream("GET", f"/api/finetunes/{job_id}/events") as stream:  # ends with the job
        events = parse_events("".join(stream.iter_text()))
    return client.get(f"/api/finetunes/{job_id}").json(), events


@pytest.mark.slow
@needs_trainer
def test_a_fine_tune_runs_streams_and_its_classifiers_answer(app_client, base):
    t0 = time.monotonic()
    job, events = run_to_end(app_client, {**base, "task_text": task_text(), "task_name": "king or sea",
                                          "readout": {"gpt": "king"}})
    assert job["status"] == "finished", (job["reason"], job["error"])
    kinds = [k for k, _ in events]
    assert kinds.index("start") < kinds.index("result") < kinds.index("summary")
    assert "classifier" in kinds and events[-1][0] == "status" and events[-1][1]["status"] == "finished"
    # the job's numbers are the trainer's lines, folded
    results = [e for k, e in events if k == "result"]
    assert job["results"] == [{k: v for k, v in e.items() if k != "event"} for e in results]
    assert job["done"] == job["total"] == 5 * 2 * 2 + 1 == len(results)  # + the declared readout's zero-label rule
    assert set(job["summary"]) == {"readout", "full", "probe", "scratch", "ngram"}
    assert job["metric"] == "accuracy" and job["final"]["metric"] == "accuracy"
    assert job["final"]["headline"]["text"] and set(job["final"]["cpu_seconds"]) == set(job["summary"])
    assert job["start"]["majority"]["label"] in ("king", "sea") and job["gpt_way"]["answers"]
    assert set(job["summary"]["readout"]) == {"0", "4", "all"}
    for arm, sizes in job["summary"].items():
        for size, cell in sizes.items():
            assert cell["n"] == (1 if size == "0" else 2) and 0 <= cell["lo"] <= cell["mean"] <= cell["hi"] <= 1
            assert job["so_far"][arm][size]["mean"] == pytest.approx(cell["mean"])
    assert job["settings"]["task_label"] == "king or sea" and job["start"]["kind"] == "sequence"
    # classifiers are model sets, served like every other model
    sets = {s["id"]: s for s in app_client.get("/api/models").json()["sets"]}
    served = [c for c in job["classifiers"] if c.get("model")]
    assert {c["arm"] for c in served} >= {"full"} and not {c["arm"] for c in job["classifiers"]} & {"ngram", "readout"}
    for c in served:
        assert sets[c["model"]]["kind"] == "classifier" and sets[c["model"]]["families"] == ["classifier"]
        r = app_client.post("/api/classify", json={"model": c["model"], "text": "Line 3 speaks of the sea"})
        assert r.status_code == 200, r.json()
        out = r.json()
        assert out["labels"] == job["start"]["labels"] and sum(out["probabilities"]) == pytest.approx(1.0)
        assert out["prediction"] in out["labels"]
    # a late joiner gets the same history; deleting removes the classifiers
    with app_client.stream("GET", f"/api/finetunes/{job['id']}/events") as stream:
        again = parse_events("".join(stream.iter_text()))
    assert [e for e in again if e[0] != "status"] == [e for e in events if e[0] != "status"]
    assert app_client.delete(f"/api/finetunes/{job['id']}", headers=AUTH).json()["status"] == "deleted"
    assert app_client.post("/api/classify", json={"model": served[0]["model"], "text": "a"}).status_code == 404
    print(f"fine-tune grid of 20 on the tiny models: {time.monotonic() - t0:.1f} s")


@pytest.mark.slow
@needs_trainer
def test_a_readout_given_with_the_start_reaches_the_trainer(app_client, base):
    """Issue 42 must 1: `readout` is passed to the trainer as --readout; the file declares none, so without it
    the whole-input task would get no readout at all (GPT's likelihood only when declared)."""
    body = {**base, "task_text": task_text(), "arms": ["readout"], "sizes": ["all"], "seeds": 1}
    job, _ = run_to_end(app_client, {**body, "readout": {"gpt": "king"}})
    assert job["status"] == "finished", (job["reason"], job["error"])
    assert job["settings"]["readout"] == {"gpt": "king"} and "'king'" in job["start"]["readout"]
    assert set(job["summary"]["readout"]) == {"0", "all"}
    app_client.delete(f"/api/finetunes/{job['id']}", headers=AUTH)
    r = app_client.post("/api/finetunes", json=body, headers=AUTH)  # nothing declared: the readout is skipped, said why
    assert r.status_code == 202
    with app_client.stream("GET", f"/api/finetunes/{r.json()['id']}/events") as stream:
        events = parse_events("".join(stream.iter_text()))
    errors = [e for k, e in events if k == "error"]
    assert errors and "declares no readout" in errors[-1]["message"]
    app_client.delete(f"/api/finetunes/{r.json()['id']}", headers=AUTH)
    # an uploaded file that declares its own on its first line: read so, with no `readout` in the start
    job, _ = run_to_end(app_client, {**body, "task_text": json.dumps({"readout": {"gpt": "sea"}}) + "\n" + task_text()})
    assert job["status"] == "finished" and job["settings"]["readout"] is None and "'sea'" in job["start"]["readout"]
    app_client.delete(f"/api/finetunes/{job['id']}", headers=AUTH)


@pytest.mark.slow
@needs_trainer
def test_a_per_character_task_answers_every_character(app_client, base):
    job, _ = run_to_end(app_client, {**base, "task_text": task_text("token"), "arms": ["full"], "sizes": ["all"],
                                     "seeds": 1})
    assert job["status"] == "finished", (job["reason"], job["error"])
    assert job["start"]["kind"] == "token" and job["metric"] == "f1" and set(job["results"][0]) >= {"f1", "score"}
    model = next(c["model"] for c in job["classifiers"] if c.get("model"))
    out = app_client.post("/api/classify", json={"model": model, "text": "the sea. a king"}).json()
    assert out["kind"] == "token" and [c["char"] for c in out["characters"]] == list("the sea. a king")
    assert all(sum(c["probabilities"]) == pytest.approx(1.0) for c in out["characters"])
    app_client.delete(f"/api/finetunes/{job['id']}", headers=AUTH)
