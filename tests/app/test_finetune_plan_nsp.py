"""POST /api/finetune-plan with BERT's next-sentence readout (issue 52): {"nsp": LABEL} runs the readout arm
for a whole-input file of two-line texts (the model set's BERT reads it, no GPT needed); one that names no
label of the file, or a per-character task, is a 422 naming "readout"."""
from __future__ import annotations

import json
import sys

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app

TOKEN = "nsp-plan-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PAIRS = [("to be or not to be", "that is the question"), ("the king is dead", "long live the king"),
         ("a horse, a horse", "my kingdom for a horse"), ("friends, romans", "lend me your ears")] * 3


def pair_text(readout=None) -> str:
    head = json.dumps({"readout": readout}) + "\n" if readout is not None else ""
    return head + "".join(json.dumps({"text": f"{a}\n{b}", "label": "follows" if i % 2 else "elsewhere"}) + "\n"
                          for i, (a, b) in enumerate(PAIRS))


@pytest.fixture(scope="module")
def client(tiny_models_dir, tmp_path_factory):
    settings = Settings(models_dir=tiny_models_dir, data_dir=tmp_path_factory.mktemp("data"), instructor_token=TOKEN,
                        run_threads=1)
    with TestClient(create_app(settings)) as c:  # no step timing: the plan's words, not a measured time
        c.app.state.finetunes.step_times.command = lambda folder, task: [sys.executable, "-c", "print('{}')"]
        yield c


def plan(client, body: dict):
    return client.post("/api/finetune-plan", json={"arms": ["readout", "ngram"], "sizes": [8]} | body, headers=AUTH)


def test_a_chosen_or_declared_nsp_readout_runs(client):
    for body in ({"task_text": pair_text(), "readout": {"nsp": "follows"}}, {"task_text": pair_text({"nsp": "follows"})}):
        r = plan(client, body)
        assert r.status_code == 200, r.json()
        assert r.json()["arms"] == ["readout", "ngram"] and r.json()["skipped_arms"] == []
    undeclared = plan(client, {"task_text": pair_text()}).json()
    assert undeclared["arms"] == ["ngram"] and '{"nsp": LABEL}' in undeclared["skipped_arms"][0]["why"]


@pytest.mark.parametrize("body, says", [
    ({"task_text": pair_text(), "readout": {"nsp": "next"}}, "not a label"),
    ({"task": "spaces", "readout": {"nsp": "1"}}, "per-character task"),
    ({"task_text": pair_text(), "readout": {"nsp": "follows", "positions": "letters"}}, "positions"),
])
def test_an_nsp_readout_that_does_not_fit_is_a_422_naming_readout(client, body, says):
    r = plan(client, body)
    assert r.status_code == 422 and r.json()["parameter"] == "readout" and says in r.json()["detail"], r.json()
