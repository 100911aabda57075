"""The quiz score in BERT's card is what a student sees: answer every item of the bank through the
API (as the page does) and compare BERT's live answers with the card's quiz section."""
from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from app.config import REPO, Settings
from app.main import create_app

SHIPPED = REPO / "models"


def live_answers(client) -> dict:
    bank_size = client.get("/api/nsp/quiz", params={"index": 0}).json()["count"]
    said = correct = truth_next = 0
    p_next, p_not = [], []
    for index in range(bank_size):
        item = client.get("/api/nsp/quiz", params={"index": index}).json()
        r = client.post(f"/api/nsp/quiz/{item['id']}/answer", json={"guess": "IsNext"})
        assert r.status_code == 200, r.text
        body = r.json()
        said += body["model_guess"] == "IsNext"
        correct += body["model_correct"]
        truth_next += body["truth"] == "IsNext"
        (p_next if body["truth"] == "IsNext" else p_not).append(body["p_is_next"])
    return {"items": bank_size, "correct": correct, "is_next_said": said, "is_next_items": truth_next,
            "mean_next": sum(p_next) / len(p_next), "mean_not": sum(p_not) / len(p_not)}


def check_card_matches(client):
    quiz = client.get("/api/models").json()["cards"]["bert"]["quiz"]
    live = live_answers(client)
    assert quiz["items"] == live["items"] and quiz["is_next_items"] == live["is_next_items"] == live["items"] // 2
    assert quiz["correct"] == live["correct"] and quiz["accuracy"] == pytest.approx(live["correct"] / live["items"])
    assert quiz["is_next_said"] == live["is_next_said"]
    assert quiz["mean_p_is_next"]["is_next_items"] == pytest.approx(live["mean_next"], abs=1e-6)
    assert quiz["mean_p_is_next"]["not_next_items"] == pytest.approx(live["mean_not"], abs=1e-6)
    return quiz


def test_tiny_card_quiz_equals_live_answers(client):
    check_card_matches(client)


@pytest.mark.skipif(not (SHIPPED / "bert.onnx").exists(), reason="models/bert.onnx not built yet")
def test_shipped_card_quiz_equals_live_answers():
    with TestClient(create_app(Settings(models_dir=SHIPPED))) as client:
        quiz = check_card_matches(client)
    assert quiz["items"] == 200
    bank = json.loads((SHIPPED / "nsp_quiz.json").read_text())
    assert quiz["seed"] == bank["seed"]
