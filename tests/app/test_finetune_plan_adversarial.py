"""An adversarial pass on the fine-tune lab's two instructor endpoints, POST /api/finetune-plan (the plan and
estimate before Start) and POST /api/finetunes (Start): every hostile body found to misbehave is here, each a 4xx
naming the parameter, never a 500 or a traceback, and the plan refuses exactly what Start refuses (the page asks
the plan first with the same fields). No trainer runs: Start's launch is a stand-in where a start is accepted."""
from __future__ import annotations

import json
import logging
import sys

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app

from test_finetune_plan import six_lines  # noqa: E402 (tests/app is on sys.path)

TOKEN = "adversarial-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
PLAN, START = "/api/finetune-plan", "/api/finetunes"
TIMING = {"event": "step_time", "step_seconds": 0.1, "small_step_seconds": 0.02, "start_seconds": 3.0,
          "padded_length": 40.0, "batch": 16, "threads": 1, "device": "cpu", "context": 64}


def per_character(n: int = 30) -> str:
    """A per-character task (tags: 1 at each sentence's first letter), which an {"insert": ...} readout fits."""
    rows = []
    for i in range(n):
        text = f"the king {i} speaks. a ship sails."
        rows.append({"text": text, "tags": "".join("1" if j == 0 or text[j - 2:j] == ". " else "0" for j in range(len(text)))})
    return "".join(json.dumps(r) + "\n" for r in rows)


@pytest.fixture(scope="module")
def module_client(tiny_models_dir, tmp_path_factory):
    settings = Settings(models_dir=tiny_models_dir, data_dir=tmp_path_factory.mktemp("data"), instructor_token=TOKEN,
                        run_threads=1)
    with TestClient(create_app(settings), raise_server_exceptions=False, headers=AUTH) as c:
        times = c.app.state.finetunes.step_times  # a stand-in for the trainer's one timed step
        times.command = lambda folder, task: [sys.executable, "-c", f"import json; print(json.dumps({TIMING!r}))"]
        yield c


@pytest.fixture()
def client(module_client):
    module_client.app.state.auth_throttle = None
    return module_client


@pytest.fixture()
def app(client):
    return client.app


@pytest.fixture()
def started(app, monkeypatch) -> list[dict]:
    """Start's launch replaced: the job's record is kept here, nothing is written and no trainer runs."""
    jobs: list[dict] = []

    def launch(record, files):
        jobs.append(record("f-20250101-000000-abcd", 1))
        return jobs[-1]

    monkeypatch.setattr(app.state.finetunes, "launch", launch)
    return jobs


def model(client) -> str:
    return client.get("/api/models").json()["default"]


def raw(fields: dict, **escaped: str) -> str:
    """A JSON body with `escaped` fields spliced in as raw JSON text (a lone surrogate's escape, as a client can send)."""
    text = json.dumps(fields)
    return text[:-1] + "".join(f', "{k}": {v}' for k, v in escaped.items()) + "}"


def tracebacks(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


@pytest.mark.parametrize("readout", ['"\\ud800"', '{"masked": "\\ud800"}', '{"masked": "other", "positions": "\\udfff"}'])
@pytest.mark.parametrize("path", [PLAN, START])
def test_a_lone_surrogate_echoed_in_the_readout_answer_is_a_422_naming_readout(client, started, caplog, path, readout):
    """Was a 500: the sentence quoting the readout held half a character, which JSON's UTF-8 cannot carry."""
    caplog.set_level(logging.INFO)
    r = client.post(path, content=raw({"task_text": per_character(), "model": model(client)}, readout=readout))
    assert r.status_code == 422 and r.json()["parameter"] == "readout", r.text
    assert "\\ud" in r.json()["detail"] or "\\udfff" in r.json()["detail"]  # shown escaped, not dropped
    assert not tracebacks(caplog) and not started


@pytest.mark.parametrize("path", [PLAN, START])
def test_an_insert_readout_of_half_a_character_is_refused_by_plan_and_start_alike(client, app, started, path):
    """Was: the plan answered 200, and Start a 422 naming task_text ("must be UTF-8 text", from writing job.json)."""
    r = client.post(path, content=raw({"task_text": per_character(), "model": model(client)},
                                      readout='{"insert": "\\ud800"}'))
    assert r.status_code == 422 and r.json()["parameter"] == "readout", r.text
    assert "surrogate" in r.json()["detail"]
    folder = app.state.settings.data_dir / "finetunes"
    assert not started and (not folder.exists() or not any(folder.iterdir()))  # nothing half-written


@pytest.mark.parametrize("path", [PLAN, START])
@pytest.mark.parametrize("fields", [{"seeds": 2.0}, {"steps": 8.0}, {"sizes": [8.0, "all"]}])
def test_integral_numbers_are_integers_on_both_endpoints(client, started, path, fields):
    """JSON has one number type (app/schemas Strict): 2.0 is the integer 2. Was: Start took seeds 2.0 and the plan
    refused it ("seeds must be an integer"); both refused sizes [8.0]."""
    r = client.post(path, json={"task_text": six_lines(), "model": model(client)} | fields)
    assert r.status_code in (200, 202), r.text
    if path == START:
        st = started[-1]["settings"]
        assert type(st["seeds"]) is int and all(type(s) is int or s == "all" for s in st["sizes"])
        assert st["steps"] is None or type(st["steps"]) is int


@pytest.mark.parametrize("path", [PLAN, START])
def test_a_fractional_or_huge_number_names_its_field_the_same_on_both(client, started, path):
    for fields, said in (({"seeds": 2.5}, "seeds must be an integer"), ({"steps": 1e308}, "steps must be at most 5000"),
                         ({"sizes": [8.5]}, "sizes must be an integer")):
        r = client.post(path, json={"task_text": six_lines(), "model": model(client)} | fields)
        assert r.status_code == 422 and r.json()["detail"] == said, (fields, r.text)
    assert not started


@pytest.mark.parametrize("path", [PLAN, START])
def test_a_field_name_of_half_a_character_is_said_as_such(client, path):
    """Was: "the request body must be a JSON object" for a body that is one."""
    r = client.post(path, content=raw({"task": "spaces", "model": model(client)}, **{"\\ud800": "1"}))
    assert r.status_code == 422 and "not valid Unicode" in r.json()["detail"], r.text


@pytest.mark.parametrize("path", [PLAN, START])
def test_an_unknown_field_with_an_empty_or_huge_name_is_named_readably_and_briefly(client, path):
    r = client.post(path, json={"task": "spaces", "model": model(client), "": 1})
    assert r.status_code == 422 and r.json() == {"detail": "'' is not a parameter of this endpoint", "parameter": ""}
    r = client.post(path, json={"task": "spaces", "model": model(client), "k" * 100_000: 1})
    assert r.status_code == 422 and len(r.content) < 400, r.text[:200]  # not 100 KB of its name echoed
    assert r.json()["detail"].endswith("... is not a parameter of this endpoint") and r.json()["parameter"].startswith("kkk")
