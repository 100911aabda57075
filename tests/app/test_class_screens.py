"""What the class-session screens are given to show (issue 25): a concept check's choices as text
(never the objects of the bank, never which choice has no "why" before the reveal), the "why" of
every choice after it, Be the BERT's share per hidden character, concept answers as the choice's
text in the CSV, Pause, and re-joining from another browser with the rejoin code."""
from __future__ import annotations

import csv
import io
import itertools

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from app.routers.concepts import bank
from tests.conftest import SHIPPED_MODELS

TOKEN = "class-screens-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    application = create_app(Settings(models_dir=SHIPPED_MODELS, data_dir=tmp_path_factory.mktemp("data"),
                                      instructor_token=TOKEN))
    with TestClient(application):
        yield application


@pytest.fixture
def teacher(app):
    return TestClient(app, headers=AUTH)


def start(teacher, **body) -> str:
    r = teacher.post("/api/sessions", json=body)
    assert r.status_code == 201, r.text
    return r.json()["code"]


_addresses = itertools.count(2)


def device(app) -> TestClient:
    """A browser on its own address (the budget of new nicknames is per address)."""
    n = next(_addresses)
    return TestClient(app, client=(f"127.2.{n >> 8 & 255}.{n & 255}", 50000))


def joined(app, code: str, nickname: str) -> TestClient:
    s = device(app)
    r = s.post(f"/api/sessions/{code}/join", json={"nickname": nickname})
    assert r.status_code == 200, r.text
    return s


def go(teacher, code, **state) -> dict:
    r = teacher.put(f"/api/sessions/{code}/state", json=state)
    assert r.status_code == 200, r.text
    return r.json()


def answer(s, code, activity, item, value):
    return s.post(f"/api/sessions/{code}/answers", json={"activity": activity, "item": item, "answer": value})


def test_concept_choices_are_text_and_the_why_comes_with_the_reveal(app, teacher):
    question = next(q for q in bank() if q["id"] == "right-context")
    texts = [c["text"] for c in question["choices"]]
    code = start(teacher, nsp_count=0, concepts=["right-context"])
    ana, ben = joined(app, code, "Ana"), joined(app, code, "Ben")
    go(teacher, code, page="concept")
    for viewer in (ana, teacher):
        current = viewer.get(f"/api/sessions/{code}").json()["current"]
        assert current["content"]["choices"] == texts  # strings a page can print as they are
        assert "why" not in current and "explanation" not in current  # the one without a why is the key
    pooled = teacher.get(f"/api/sessions/{code}/results").json()["items"][0]
    assert pooled["choices"] == texts and "why" not in pooled
    wrong = next(k for k in range(len(texts)) if k != question["answer"])
    assert answer(ana, code, "concept", "right-context", str(question["answer"])).status_code == 201
    assert answer(ben, code, "concept", "right-context", str(wrong)).status_code == 201
    go(teacher, code, revealed=True)
    whys = [c.get("why") for c in question["choices"]]
    current = ben.get(f"/api/sessions/{code}").json()["current"]
    assert current["truth"] == str(question["answer"]) and current["your_answer"] == str(wrong)
    assert current["why"] == whys and current["why"][wrong] and current["why"][question["answer"]] is None
    assert current["explanation"] == question["explanation"]
    shown = ben.get(f"/api/sessions/{code}/results").json()["items"][0]
    assert shown["choices"] == texts and shown["why"] == whys and shown["class_correct"] == 0.5
    # the CSV names the choice a student picked, as it read on the phone
    rows = list(csv.DictReader(io.StringIO(teacher.get(f"/api/sessions/{code}/export.csv").text)))
    assert {r["nickname"]: r["answer"] for r in rows} == {"Ana": texts[question["answer"]], "Ben": texts[wrong]}


def test_be_the_bert_reveal_gives_the_share_right_per_hidden_character(app, teacher):
    code = start(teacher, nsp_count=0, concepts=[])
    students = [joined(app, code, f"S{k}") for k in range(4)]
    item = teacher.post(f"/api/sessions/{code}/items", json={"activity": "fill", "text": "the king",
                                                              "positions": [4, 6]}).json()["item"]
    go(teacher, code, page="fill", item=item)
    for s, guess in zip(students, ("kn", "kx", "wn", "ka")):  # k right 3 of 4, n right 2 of 4, both right 1 of 4
        assert answer(s, code, "fill", item, guess).status_code == 201
    before = teacher.get(f"/api/sessions/{code}/results").json()["items"][0]
    assert "char_correct" not in before
    go(teacher, code, revealed=True)
    res = teacher.get(f"/api/sessions/{code}/results").json()["items"][0]
    assert res["truth"] == "kn"
    assert res["char_correct"] == [0.75, 0.5] and res["class_correct"] == 0.25


def test_pause_freezes_answers_until_the_teacher_goes_on(app, teacher):
    code = start(teacher, nsp_count=2)
    ana = joined(app, code, "Ana")
    item = go(teacher, code, page="nsp")["item"]
    state = go(teacher, code, paused=True)
    assert state["paused"] is True
    seen = ana.get(f"/api/sessions/{code}").json()
    assert seen["paused"] is True and seen["version"] == state["version"]
    r = answer(ana, code, "nsp", item, "IsNext")
    assert r.status_code == 409 and r.json()["parameter"] == "item" and "paused" in r.json()["detail"]
    assert go(teacher, code, paused=False)["paused"] is False
    assert answer(ana, code, "nsp", item, "IsNext").status_code == 201
    r = teacher.put(f"/api/sessions/{code}/state", json={"paused": "yes"})
    assert r.status_code == 422 and r.json()["parameter"] == "paused"


def test_another_browser_takes_its_nickname_back_with_the_rejoin_code(app, teacher):
    code = start(teacher, nsp_count=2)
    phone = joined(app, code, "Ana")
    me = phone.get(f"/api/sessions/{code}").json()["me"]
    rejoin = me["rejoin_code"]
    assert len(rejoin) == 6 and phone.get(f"/api/sessions/{code}").json()["me"]["rejoin_code"] == rejoin
    item = go(teacher, code, page="nsp")["item"]
    assert answer(phone, code, "nsp", item, "NotNext").status_code == 201
    laptop = device(app)
    url = f"/api/sessions/{code}/join"
    assert laptop.post(url, json={"nickname": "ana"}).status_code == 409  # taken, and no code given
    for wrong in ("AAAAAA", "x", me["rejoin_code"][::-1] if me["rejoin_code"][::-1] != rejoin else "CCCCCC"):
        r = laptop.post(url, json={"nickname": "Ana", "rejoin": wrong})
        assert r.status_code == 404 and r.json()["parameter"] == "rejoin", r.text
    r = laptop.post(url, json={"nickname": "Ana", "rejoin": rejoin[:3].lower() + "-" + rejoin[3:]})
    assert r.status_code == 200 and r.json()["id"] == me["id"]
    now = laptop.get(f"/api/sessions/{code}").json()
    assert now["me"]["nickname"] == "Ana" and now["current"]["your_answer"] == "NotNext"
    assert now["me"]["rejoin_code"] != rejoin  # a new cookie, a new code
    assert phone.get(f"/api/sessions/{code}").json().get("me") is None  # the old browser is signed out
    assert laptop.post(url, json={"nickname": "Bo", "rejoin": now["me"]["rejoin_code"]}).status_code == 404
    # a nickname the teacher removed cannot be taken back
    assert teacher.delete(f"/api/sessions/{code}/participants/{me['id']}").status_code == 204
    other = device(app)
    r = other.post(url, json={"nickname": "Ana", "rejoin": now["me"]["rejoin_code"]})
    assert r.status_code == 404 and r.json()["parameter"] == "rejoin"
