"""What the served OpenAPI schema says a route answers is what it answers (issue 53): a field the
schema requires is in the answer, a file route's documented media type is the one it sends, a 409
a route gives is listed, and a job's event stream lists the events its trainer writes. Each case
reads the real schema (/openapi.json) and the real answer, so a change to either side fails here."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.app.class_kit import browser, go, served, start

TOKEN = "documented-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with served(tmp_path_factory.mktemp("data"), TOKEN) as application:
        yield application


@pytest.fixture(scope="module")
def teacher(app):
    return TestClient(app, headers=AUTH)


@pytest.fixture(scope="module")
def spec(teacher) -> dict:
    return teacher.get("/openapi.json").json()


def response(spec: dict, path: str, method: str, status: str) -> dict:
    return spec["paths"][path][method]["responses"][status]


def test_every_field_the_session_state_requires_is_in_its_answers(app, teacher, spec):
    """SessionState.item was required but left out while null (the lobby, before any item)."""
    required = spec["components"]["schemas"]["SessionState"]["required"]
    code = start(teacher, nsp_count=2)
    lobby = teacher.get(f"/api/sessions/{code}").json()
    assert "item" not in lobby  # null fields are left out of the answer ...
    assert not [k for k in required if k not in lobby], lobby  # ... so the schema must not require them
    phone = browser(app)
    assert phone.post(f"/api/sessions/{code}/join", json={"nickname": "Ana"}).status_code == 200
    on_item = go(teacher, code, page="nsp")
    assert on_item["item"] and not [k for k in required if k not in on_item]
    seen = phone.get(f"/api/sessions/{code}").json()
    assert not [k for k in required if k not in seen], seen


@pytest.mark.parametrize("path, media_type", [("/api/sessions/{code}/export.csv", "text/csv"),
                                              ("/api/sessions/{code}/scores.csv", "text/csv"),
                                              ("/api/sessions/{code}/labels.jsonl", "application/x-ndjson")])
def test_a_file_route_documents_the_media_type_it_sends(teacher, spec, path, media_type):
    documented = list(response(spec, path, "get", "200")["content"])
    assert documented == [media_type], documented
    code = start(teacher, nsp_count=0, labels=["happy", "sad"], lines=["What a lovely day"])
    sent = teacher.get(path.format(code=code))
    assert sent.status_code == 200 and sent.headers["content-type"].split(";")[0] == media_type


def test_the_embargo_on_a_class_item_is_documented_and_given(app, teacher, spec):
    """While a class answers a concept question the teacher has not revealed, the self-study route
    answers 409 naming `id` (app/classes/embargo.py): the schema lists that 409, as it does for NSP."""
    for path in ("/api/concepts/{question_id}/answer", "/api/nsp/quiz/{item_id}/answer"):
        assert "not revealed" in response(spec, path, "post", "409")["description"], path
    for live in teacher.get("/api/sessions").json()["sessions"]:  # other tests' sessions plan the question too
        assert teacher.delete(f"/api/sessions/{live['code']}").status_code == 204
    code = start(teacher, nsp_count=0, concepts=["right-context"])
    go(teacher, code, page="concept")
    r = browser(app).post("/api/concepts/right-context/answer", json={"choice": 0})
    assert r.status_code == 409 and r.json()["parameter"] == "id", r.text
    go(teacher, code, revealed=True)
    assert browser(app).post("/api/concepts/right-context/answer", json={"choice": 0}).status_code == 200


def trainer_events(folder: str) -> set[str]:
    """Every event name the run trainer writes (its `emit("name", ...)` calls)."""
    names = set()
    for source in (REPO / folder).rglob("*.py"):
        names |= set(re.findall(r"""\bemit\(\s*["']([a-z_]+)["']""", source.read_text(encoding="utf-8")))
    return names


def test_the_run_event_stream_lists_the_events_it_sends(spec):
    """The run's stream sends each trainer line as its event (snapshot_failed included) and `status`;
    the schema said only "a string" and its description left snapshot_failed out."""
    content = response(spec, "/api/runs/{run_id}/events", "get", "200")["content"]
    assert list(content) == ["text/event-stream"]
    item = content["text/event-stream"]["itemSchema"]
    listed = set(item["properties"]["event"]["enum"])
    sent = trainer_events("training/live")
    assert sent and sent | {"status"} <= listed, sorted(sent - listed)
    assert item["properties"]["data"]["contentMediaType"] == "application/json"
    assert "schema" not in content["text/event-stream"]  # one description of the body, not two


def test_the_fine_tune_event_stream_lists_the_events_its_trainer_writes(spec):
    """The fine-tune trainer's output, as its command documents it (training/finetune/command.py), and `status`."""
    content = response(spec, "/api/finetunes/{finetune_id}/events", "get", "200")["content"]
    assert list(content) == ["text/event-stream"] and "schema" not in content["text/event-stream"]
    listed = set(content["text/event-stream"]["itemSchema"]["properties"]["event"]["enum"])
    head = (REPO / "training" / "finetune" / "command.py").read_text(encoding="utf-8").split('"""')[1]
    written = set(re.findall(r'\{"event": "([a-z_]+)"', head))
    assert written and written | {"status"} == listed, (sorted(written), sorted(listed))


@pytest.mark.slow
def test_a_real_runs_events_are_the_documented_ones(tiny_models_dir, tmp_path):
    """A tiny run trained for real: every event its stream carries is one the schema lists, its data JSON."""
    from app.config import Settings
    from app.main import create_app

    settings = Settings(models_dir=tiny_models_dir, data_dir=tmp_path, instructor_token=TOKEN,
                        run_test_presets=True, run_threads=1)
    with TestClient(create_app(settings), headers=AUTH) as c:
        listed = set(c.get("/openapi.json").json()["paths"]["/api/runs/{run_id}/events"]["get"]["responses"]["200"]
                     ["content"]["text/event-stream"]["itemSchema"]["properties"]["event"]["enum"])
        r = c.post("/api/runs", json={"preset": "tiny"})
        assert r.status_code == 202, r.text
        with c.stream("GET", f"/api/runs/{r.json()['id']}/events") as stream:  # ends with the run
            body = "".join(stream.iter_text())
    events = [dict(line.split(": ", 1) for line in block.split("\n") if ": " in line and not line.startswith(":"))
              for block in body.split("\n\n") if "event: " in block]
    names = {e["event"] for e in events}
    assert {"start", "finished", "status"} <= names and names <= listed, sorted(names - listed)
    assert all(isinstance(json.loads(e["data"]), dict) for e in events)
