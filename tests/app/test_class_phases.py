"""Issue 34: an item's phase (open -> locked -> revealed) is the server's truth, kept per item in
the database, and nothing of the class's split leaks before the reveal.

Each test reproduces what the issue saw in a full lesson, against the real app (TestClient, each
phone with its own address): going back (an item or an activity button) to a revealed item
reopened answering while the projector showed the answer; NSP and Be the BERT sent the live split
before the reveal; Label together after the reveal gave the phones 0/0 on every line but the first."""
from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from tests.app.class_kit import go, join, served, start

TOKEN = "phase-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="module")
def app(data):
    with served(data, TOKEN) as application:
        yield application


@pytest.fixture
def teacher(app):
    return TestClient(app, headers=AUTH, client=("127.0.0.1", 50000))


def phone(app, code: str, nickname: str) -> TestClient:
    s, status = join(app, code, nickname)
    assert status == 200
    return s


def send(s, code, activity, item, answer):
    return s.post(f"/api/sessions/{code}/answers", json={"activity": activity, "item": item, "answer": answer})


def test_going_back_to_a_revealed_item_shows_it_revealed_and_refuses_answers(app, data, teacher):
    code = start(teacher, nsp_count=3, concepts=["right-context"])
    ana, ben = phone(app, code, "Ana"), phone(app, code, "Ben")
    first = go(teacher, code, page="nsp")["item"]
    assert send(ana, code, "nsp", first, "IsNext").status_code == 201
    go(teacher, code, revealed=True)
    second = teacher.get(f"/api/sessions/{code}").json()["items"]["nsp"][1]["item"]
    state = go(teacher, code, item=second)
    assert (state["locked"], state["revealed"]) == (False, False)  # a new item is open
    go(teacher, code, locked=True)
    # ← back to the first item: revealed, its truth shown, answers refused
    back = go(teacher, code, item=first)
    assert (back["locked"], back["revealed"]) == (True, True) and "truth" in back["current"]
    r = send(ben, code, "nsp", first, "NotNext")
    assert r.status_code == 409 and r.json()["parameter"] == "item"
    on_phone = ben.get(f"/api/sessions/{code}").json()
    assert on_phone["revealed"] and on_phone["current"]["truth"] == back["current"]["truth"]
    # the quiz route may give the truth away now: the class has seen it
    assert teacher.post(f"/api/nsp/quiz/{first}/answer", json={"guess": "IsNext"}).status_code == 200
    # an activity button and back: the same
    go(teacher, code, page="concept")
    again = go(teacher, code, page="nsp")
    assert again["item"] == first and again["revealed"] and send(ben, code, "nsp", first, "IsNext").status_code == 409
    # the locked second item stays locked
    assert go(teacher, code, item=second)["locked"] is True
    assert send(ben, code, "nsp", second, "IsNext").status_code == 409
    phases = {it["item"]: it["phase"] for it in teacher.get(f"/api/sessions/{code}").json()["items"]["nsp"]}
    assert phases[first] == "revealed" and phases[second] == "locked" and list(phases.values())[2] == "open"
    # un-revealing or unlocking a revealed item is refused: reopening is its own, explicit step
    go(teacher, code, item=first)
    for change, field in (({"revealed": False}, "revealed"), ({"locked": False}, "locked")):
        r = teacher.put(f"/api/sessions/{code}/state", json=change)
        assert r.status_code == 409 and r.json()["parameter"] == field
    # the phases survive a restart of the server (they are in the database)
    with served(data, TOKEN) as restarted:
        fresh = TestClient(restarted, headers=AUTH)
        assert fresh.get(f"/api/sessions/{code}").json()["revealed"] is True
        assert fresh.put(f"/api/sessions/{code}/state", json={"item": second}).json()["locked"] is True
        fresh.put(f"/api/sessions/{code}/state", json={"item": first})
    # the teacher reopens the item: answers are taken again, the truth is hidden again
    state = go(teacher, code, reopen=True)
    assert (state["locked"], state["revealed"]) == (False, False) and "truth" not in state["current"]
    assert send(ben, code, "nsp", first, "NotNext").status_code == 201
    assert send(ana, code, "nsp", first, "NotNext").status_code == 409  # still once per student
    assert "truth" not in ben.get(f"/api/sessions/{code}").json()["current"]
    assert ben.get(f"/api/sessions/{code}/results").json()["items"] == []


def test_nothing_of_the_split_is_sent_before_the_reveal(app, teacher, parse_sse):
    code = start(teacher, nsp_count=1, concepts=["right-context"], labels=["happy", "sad"], lines=["A fine day"])
    students = [phone(app, code, f"S{k}") for k in range(3)]
    assert teacher.post(f"/api/sessions/{code}/items",
                        json={"activity": "fill", "text": "the king", "positions": [4, 5]}).status_code == 201
    plays = {"nsp": ["IsNext", "IsNext", "NotNext"], "fill": ["ki", "ki", "wa"], "concept": ["3", "3", "1"],
             "label": ["happy", "happy", "sad"]}
    for activity, answers in plays.items():
        item = go(teacher, code, page=activity)["item"]
        for s, value in zip(students, answers):
            assert send(s, code, activity, item, value).status_code == 201
        teacher_view = [r for r in teacher.get(f"/api/sessions/{code}/results").json()["items"]
                        if r["activity"] == activity]
        assert teacher_view and all("counts" not in r and "truth" not in r for r in teacher_view), teacher_view
        assert teacher_view[0]["answered"] == 3
        assert students[0].get(f"/api/sessions/{code}/results").json()["items"] == [
            r for r in students[0].get(f"/api/sessions/{code}/results").json()["items"] if r["revealed"]]
        assert not any(r["activity"] == activity for r in students[0].get(f"/api/sessions/{code}/results").json()["items"])
        # the projector's stream: the state and the results, neither with the split
        with teacher.stream("GET", f"/api/sessions/{code}/events") as stream:
            body = ""
            for chunk in stream.iter_text():
                body += chunk
                if body.count("\n\n") >= 2:
                    break
        events = dict(parse_sse(body))
        pooled = [r for r in events["results"]["items"] if r["activity"] == activity]
        assert pooled[0]["answered"] == 3 and "counts" not in pooled[0]
        assert "count" not in json.dumps(events["state"])
        go(teacher, code, revealed=True)
        shown = [r for r in students[0].get(f"/api/sessions/{code}/results").json()["items"] if r["activity"] == activity]
        assert shown and all("counts" in r for r in shown)
    revealed = {r["activity"]: r for r in students[1].get(f"/api/sessions/{code}/results").json()["items"]}
    assert revealed["nsp"]["counts"] == {"IsNext": 2, "NotNext": 1}
    assert revealed["fill"]["counts"] == [{"k": 2, "w": 1}, {"i": 2, "a": 1}]
    assert revealed["concept"]["counts"] == {"0": 0, "1": 1, "2": 0, "3": 2}
    assert revealed["label"]["counts"] == {"happy": 2, "sad": 1}
    # the task file still pools the labels (it is the instructor's, after the class agreed)
    assert teacher.get(f"/api/sessions/{code}/labels.jsonl").text == '{"text": "A fine day", "label": "happy"}\n'


def test_label_together_reveals_every_line_to_the_phones(app, teacher):
    lines = ["What a lovely day", "All is lost", "The king is dead", "A merry heart"]
    code = start(teacher, nsp_count=0, labels=["happy", "sad"], lines=lines)
    a, b, c = (phone(app, code, n) for n in ("A", "B", "C"))
    go(teacher, code, page="label")
    votes = {"l1": ["happy", "happy", "sad"], "l2": ["sad", "sad", "sad"], "l3": ["sad", "happy", "sad"],
             "l4": ["happy", "happy", "happy"]}
    for line, labels in votes.items():
        for s, label in zip((a, b, c), labels):
            assert send(s, code, "label", line, label).status_code == 201
    go(teacher, code, revealed=True)
    pooled = {r["item"]: r["counts"] for r in a.get(f"/api/sessions/{code}/results").json()["items"]}
    assert pooled == {line: {"happy": labels.count("happy"), "sad": labels.count("sad")} for line, labels in votes.items()}
    # every line is locked once revealed, whichever line the state names
    r = teacher.put(f"/api/sessions/{code}/state", json={"item": "l3"}).json()
    assert r["revealed"] is True
    fresh = phone(app, code, "D")
    assert send(fresh, code, "label", "l4", "sad").status_code == 409


def test_j_on_the_teachers_page_puts_the_join_screen_on_every_projector(app, teacher):
    """The projector is another window (often another computer): J must go through the server."""
    code = start(teacher, nsp_count=2)
    first = go(teacher, code, page="nsp")["item"]
    projector = TestClient(app, headers=AUTH)  # the projector's own browser
    assert projector.get(f"/api/sessions/{code}").json()["join_screen"] is False
    assert go(teacher, code, join_screen=True)["join_screen"] is True
    assert projector.get(f"/api/sessions/{code}").json()["join_screen"] is True
    second = teacher.get(f"/api/sessions/{code}").json()["items"]["nsp"][1]["item"]
    assert go(teacher, code, item=second)["join_screen"] is False  # a new item fills the projector again
    assert second != first
