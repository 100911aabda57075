"""Issue 51 must 3, the server's half: a Be-the-BERT answer has a character for every hidden one. A
hidden character is never a space (adding an item refuses hiding one), so an answer with a space, a
tab or a no-break space at a hidden position is a box left empty: refused with a 422 naming `answer`,
never stored (it would count in the reveal as the class's guess). What is stored is exactly what
was sent."""
from __future__ import annotations

import csv
import io

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from tests.conftest import SHIPPED_MODELS

TOKEN = "fill-no-blanks-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    application = create_app(Settings(models_dir=SHIPPED_MODELS, data_dir=tmp_path_factory.mktemp("data"),
                                      instructor_token=TOKEN))
    with TestClient(application):
        yield application


def test_an_answer_with_a_blank_is_refused_and_a_full_one_stored_as_sent(app):
    teacher = TestClient(app, headers=AUTH)
    code = teacher.post("/api/sessions", json={"nsp_count": 0, "concepts": []}).json()["code"]
    made = teacher.post(f"/api/sessions/{code}/items", json={"activity": "fill", "text": "to be the one",
                                                             "positions": [3, 4, 6, 7, 8]})
    assert made.status_code == 201, made.text
    item = made.json()["item"]
    assert teacher.put(f"/api/sessions/{code}/state", json={"page": "fill", "item": item}).status_code == 200
    ana = TestClient(app, client=("127.3.0.1", 50000))
    assert ana.post(f"/api/sessions/{code}/join", json={"nickname": "Ana"}).status_code == 200
    for blank in ("b    ", "be he", "bet\the", "beth\u00a0", "     "):  # today's phone sent "b    " for "bethe"
        r = ana.post(f"/api/sessions/{code}/answers", json={"activity": "fill", "item": item, "answer": blank})
        assert r.status_code == 422 and r.json()["parameter"] == "answer", (blank, r.text)
    assert ana.get(f"/api/sessions/{code}").json()["current"].get("your_answer") is None  # nothing kept
    r = ana.post(f"/api/sessions/{code}/answers", json={"activity": "fill", "item": item, "answer": "bEthé"})
    assert r.status_code == 201 and r.json()["answer"] == "bEthé"
    rows = list(csv.DictReader(io.StringIO(teacher.get(f"/api/sessions/{code}/export.csv").text)))
    assert [(row["nickname"], row["item"], row["answer"]) for row in rows] == [("Ana", item, "bEthé")]
