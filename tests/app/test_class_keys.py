"""Issue 43 must 2: no answer key before its item's reveal, through any route, and class sets drawn
per session. The NSP quiz and the concept check answer with the truth (self-study); while a class
session holds an item in its plan and has not revealed it, those routes refuse it (409 naming `id`),
the next item as much as the current one. A class set is drawn per session from a seed the session
keeps (a restart keeps the set), so last week's class does not know this week's items."""
from __future__ import annotations

import pytest

from tests.app.class_kit import browser, go, served, start

TOKEN = "keys-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def data(tmp_path):
    return tmp_path / "data"


def items(teacher, code: str, activity: str) -> list[str]:
    return [it["item"] for it in teacher.get(f"/api/sessions/{code}").json()["items"][activity]]


def answer_nsp(client, item: str):
    return client.post(f"/api/nsp/quiz/{item}/answer", json={"guess": "IsNext"})


def answer_concept(client, item: str):
    return client.post(f"/api/concepts/{item}/answer", json={"choice": 0})


def test_no_key_of_a_planned_item_before_its_reveal(data):
    with served(data, TOKEN) as app:
        teacher, student = browser(app, "127.0.0.1", headers=AUTH), browser(app)
        code = start(teacher, nsp_count=3)
        nsp, concepts = items(teacher, code, "nsp"), items(teacher, code, "concept")
        go(teacher, code, page="nsp", item=nsp[0])
        for item in nsp:  # the current item and the ones to come
            r = answer_nsp(student, item)
            assert r.status_code == 409 and r.json()["parameter"] == "id", (item, r.text)
            assert "truth" not in r.text
        for item in concepts[:2]:
            r = answer_concept(student, item)
            assert r.status_code == 409 and r.json()["parameter"] == "id", (item, r.text)
        go(teacher, code, page="nsp", item=nsp[1])
        go(teacher, code, revealed=True)
        assert answer_nsp(student, nsp[1]).json()["truth"] in ("IsNext", "NotNext")  # revealed: the key is out
        assert answer_nsp(student, nsp[2]).status_code == 409
        go(teacher, code, ended=True)
        assert answer_nsp(student, nsp[2]).status_code == 200  # the class is over: self-study again
        # the quiz's own questions skip the items a live class holds back
        other = start(teacher, nsp_count=100)
        held = set(items(teacher, other, "nsp"))
        drawn = {student.get("/api/nsp/quiz").json()["id"] for _ in range(30)}
        bank = student.get("/api/nsp/quiz", params={"index": 0}).json()["count"]
        assert not drawn & held or len(held) == bank


def test_each_session_draws_its_own_set_and_a_restart_keeps_it(data):
    with served(data, TOKEN) as app:
        teacher = browser(app, "127.0.0.1", headers=AUTH)
        codes = [start(teacher, nsp_count=10) for _ in range(3)]
        sets = [items(teacher, c, "nsp") for c in codes]
        assert len({tuple(s) for s in sets}) == 3  # not the bank's first ten every time
        seeded = [items(teacher, start(teacher, nsp_count=10, nsp_seed=7), "nsp") for _ in range(2)]
        assert seeded[0] == seeded[1]  # a seed the teacher gives still picks the same set
    with served(data, TOKEN) as app:  # a restart on the same data folder
        teacher = browser(app, "127.0.0.1", headers=AUTH)
        assert [items(teacher, c, "nsp") for c in codes] == sets
