"""app/routers/nsp.py: the quiz bank and free-form next-sentence prediction."""
from __future__ import annotations

import json

import pytest

from app.sampling import softmax


@pytest.fixture(scope="module")
def bank(tiny_models_dir):
    return json.loads((tiny_models_dir / "nsp_quiz.json").read_text())["items"]


def test_quiz_by_index_and_at_random(client, bank):
    r = client.get("/api/nsp/quiz", params={"index": 3})
    assert r.json() == {"id": bank[3]["id"], "index": 3, "a": bank[3]["a"], "b": bank[3]["b"], "count": len(bank)}
    ids = {client.get("/api/nsp/quiz").json()["id"] for _ in range(30)}
    assert ids <= {it["id"] for it in bank} and len(ids) > 1


@pytest.mark.parametrize("guess", ["IsNext", "NotNext"])
def test_answer_checks_guess_and_model(client, bank, models, guess):
    for item in bank[:4]:
        body = client.post(f"/api/nsp/quiz/{item['id']}/answer", json={"guess": guess}).json()
        truth = "IsNext" if item["is_next"] else "NotNext"
        a, _ = models.vocab.encode(item["a"])
        b, _ = models.vocab.encode(item["b"])
        _, nsp = models.bert.forward([3, *a, 4, *b, 4], [0] * (len(a) + 2) + [1] * (len(b) + 1))
        p = float(softmax(nsp)[0])
        assert body == {"id": item["id"], "correct": guess == truth, "truth": truth, "p_is_next": pytest.approx(p),
                        "model_guess": "IsNext" if p >= 0.5 else "NotNext",
                        "model_correct": ("IsNext" if p >= 0.5 else "NotNext") == truth,
                        "source_a": item["source_a"], "source_b": item["source_b"]}


def test_predict_any_pair(client):
    body = client.post("/api/nsp/predict", json={"a": "the king and the crown", "b": "a ship é"}).json()
    assert 0 < body["p_is_next"] < 1
    assert body["prediction"] == ("IsNext" if body["p_is_next"] >= 0.5 else "NotNext")
    assert body["unknown_chars"] == [{"position": 7, "char": "é", "segment": "b"}]


def test_predict_fits_exactly_the_context(client):
    assert client.post("/api/nsp/predict", json={"a": "a" * 30, "b": "b" * 31}).status_code == 200  # 61 + 3 = 64
    r = client.post("/api/nsp/predict", json={"a": "a" * 30, "b": "b" * 32})
    assert r.status_code == 422 and r.json()["parameter"] == "b" and "61" in r.json()["detail"]


@pytest.mark.parametrize("method,url,body,status,parameter", [
    ("GET", "/api/nsp/quiz?index=-1", None, 422, "index"),
    ("GET", "/api/nsp/quiz?index=20", None, 422, "index"),
    ("GET", "/api/nsp/quiz?index=x", None, 422, "index"),
    ("POST", "/api/nsp/quiz/q999/answer", {"guess": "IsNext"}, 404, "id"),
    ("POST", "/api/nsp/quiz/q000/answer", {"guess": "Maybe"}, 422, "guess"),
    ("POST", "/api/nsp/quiz/q000/answer", {}, 422, "guess"),
    ("POST", "/api/nsp/predict", {"a": "", "b": "x"}, 422, "a"),
    ("POST", "/api/nsp/predict", {"a": "x", "b": ""}, 422, "b"),
    ("POST", "/api/nsp/predict", {"a": "x" * 62, "b": "y"}, 422, "a"),
])
def test_bad_input(client, method, url, body, status, parameter):
    r = client.request(method, url, json=body)
    assert r.status_code == status
    assert r.json()["parameter"] == parameter and r.json()["detail"]
