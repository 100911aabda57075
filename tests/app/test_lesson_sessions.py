"""Issue 50 musts 3 and 4 over HTTP: a class started from a lesson walks its stages in order (their
items, the applet's settings as the teacher changes them), a restart resumes at the same stage, and
the projector's own key shows the stage with no login, no control and no answer before its reveal,
until the session ends."""
from __future__ import annotations

import json

import pytest

from app.lessons import store
from tests.app.class_kit import browser, go, join, served

TOKEN = "lesson-sessions-teacher"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SHIPPED = json.loads((store.SHIPPED / "what-pretraining-is.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("lesson-sessions")


@pytest.fixture(scope="module")
def app(data_dir):
    with served(data_dir, TOKEN) as application:
        yield application


@pytest.fixture
def teacher(app):
    return browser(app, "127.0.0.1", headers=AUTH)


def start_lesson(teacher, lesson="what-pretraining-is") -> str:
    r = teacher.post("/api/sessions", json={"lesson": lesson})
    assert r.status_code == 201, r.text
    return r.json()["code"]


def test_a_lesson_session_goes_through_every_stage_in_order(teacher):
    code = start_lesson(teacher)
    first = teacher.get(f"/api/sessions/{code}").json()
    assert first["page"] == "lobby" and first["lesson"]["stage"] is None
    assert [s["title"] for s in first["lesson"]["stages"]] == [s["title"] for s in SHIPPED["stages"]]
    for k, stage in enumerate(SHIPPED["stages"]):
        state = go(teacher, code, stage=k)
        assert state["lesson"]["stage"] == k
        if stage["kind"] == "applet":
            assert state["page"] == "applet" and state["applet"]["page"] == stage["page"]
            assert state["applet"]["phones"] == stage["phones"]
            shown = dict(p.split("=", 1) for p in state["applet"]["query"].split("&"))
            assert set(shown) == set(stage["state"])
        else:
            assert state["page"] == stage["kind"]
            keys = state["lesson"]["stages"][k]["keys"]
            assert state["item"] == keys[0] and len(keys) == len(stage.get("items") or stage.get("questions")
                                                                 or stage.get("lines") or range(stage.get("count", 0)))
            for key in keys[1:]:  # the teacher's → walks the stage's items
                assert go(teacher, code, item=key)["lesson"]["stage"] == k


def test_the_items_are_the_lessons_own(teacher):
    code = start_lesson(teacher)
    fill = go(teacher, code, stage=0)
    assert "".join(fill["current"]["content"]["parts"]).startswith("To be, or ")
    concept = go(teacher, code, stage=7)
    assert concept["item"] == "self-supervised"
    label = go(teacher, code, stage=8)
    assert [x["text"] for x in label["current"]["lines"]] == SHIPPED["stages"][8]["lines"]
    assert label["current"]["content"]["choices"] == ["happy", "sad"]
    # the NSP pairs drawn with the stated seed are the same in every class given this lesson
    other = start_lesson(teacher)
    assert go(teacher, code, stage=6)["lesson"]["stages"][6]["keys"] == go(teacher, other, stage=6)["lesson"]["stages"][6]["keys"]


def test_the_applet_follows_the_teacher_and_comes_back_as_left(app, teacher):
    code = start_lesson(teacher)
    phone, status = join(app, code, "Ana")
    assert status == 200
    go(teacher, code, stage=3)
    moved = go(teacher, code, applet_query="prompt=To+be&out=%2C+or&temperature=0.5&top_k=5&projector=1")
    assert moved["applet"]["query"] == "prompt=To+be&out=%2C+or&temperature=0.5&top_k=5"  # projector is the screen's own
    assert phone.get(f"/api/sessions/{code}").json()["applet"]["query"] == moved["applet"]["query"]
    go(teacher, code, stage=0)
    assert go(teacher, code, stage=3)["applet"]["query"] == moved["applet"]["query"]
    wrong = teacher.put(f"/api/sessions/{code}/state", json={"stage": 0, "applet_query": "a=1"})
    assert wrong.status_code == 409 and wrong.json()["parameter"] == "applet_query"
    bad = teacher.put(f"/api/sessions/{code}/state", json={"stage": 3, "applet_query": "<script>=1"})
    assert bad.status_code == 422 and bad.json()["parameter"] == "applet_query"
    far = teacher.put(f"/api/sessions/{code}/state", json={"stage": 40})
    assert far.status_code == 404 and far.json()["parameter"] == "stage"
    notes = phone.get(f"/api/sessions/{code}").json()["lesson"]["stages"]
    assert all("notes" not in s and "keys" not in s for s in notes)  # the teacher's notes are the teacher's


def test_a_lesson_session_refuses_items_of_its_own_and_unknown_lessons(teacher):
    r = teacher.post("/api/sessions", json={"lesson": "what-pretraining-is", "nsp_count": 3})
    assert r.status_code == 422 and r.json()["parameter"] == "nsp_count"
    r = teacher.post("/api/sessions", json={"lesson": "no-such-lesson"})
    assert r.status_code == 404 and r.json()["parameter"] == "lesson"
    assert teacher.post("/api/sessions", json={"nsp_count": 2}).json().get("code")  # a class without a lesson still starts


def test_a_restart_resumes_at_the_same_stage(data_dir, teacher):
    code = start_lesson(teacher)
    go(teacher, code, stage=2)
    go(teacher, code, applet_query="prompt=To+be&out=%2C")
    with served(data_dir, TOKEN) as again:  # a second server process on the same database
        state = browser(again, "127.0.0.1", headers=AUTH).get(f"/api/sessions/{code}").json()
    assert state["lesson"]["stage"] == 2 and state["applet"]["query"] == "prompt=To+be&out=%2C"


def test_the_projector_key_opens_the_stage_with_no_login_until_the_end(app, teacher):
    code = start_lesson(teacher)
    key = teacher.get(f"/api/sessions/{code}").json()["projector_key"]
    assert len(key) >= 32  # 192 random bits, URL-safe base64
    wall = browser(app)  # a classroom PC: no token, no cookie
    wrong = wall.post(f"/api/sessions/{code}/projector", json={"key": key[:-1] + ("A" if key[-1] != "A" else "B")})
    assert wrong.status_code == 403 and wrong.json()["parameter"] == "key"
    assert wall.post(f"/api/sessions/{code}/projector", json={"key": "É" * 10}).status_code == 403  # not a 500
    assert wall.post(f"/api/sessions/{code}/projector", json={"key": key}).status_code == 204
    phone, _ = join(app, code, "Ben")
    go(teacher, code, stage=6)
    state = wall.get(f"/api/sessions/{code}").json()
    assert state["page"] == "nsp" and "a" in state["current"]["content"] and "truth" not in state["current"]
    assert "participants" not in state and "projector_key" not in state and "leaders" not in state
    assert state.get("join_url") == teacher.post("/api/sessions", json={}).json()["student_url"]  # where to join, as told
    assert phone.post(f"/api/sessions/{code}/answers", json={"activity": "nsp", "item": state["item"],
                                                             "answer": "IsNext"}).status_code == 201
    assert wall.get(f"/api/sessions/{code}/results").json()["items"] == []  # nothing before the reveal
    assert wall.put(f"/api/sessions/{code}/state", json={"revealed": True}).status_code == 401  # no control
    go(teacher, code, revealed=True)
    assert wall.get(f"/api/sessions/{code}").json()["current"]["truth"]
    for _ in range(60):  # the projector polls freely: a student's read budget does not apply
        assert wall.get(f"/api/sessions/{code}").status_code == 200
    go(teacher, code, ended=True)
    ended = wall.post(f"/api/sessions/{code}/projector", json={"key": key})
    assert ended.status_code == 409 and ended.json()["parameter"] == "key"


def test_the_projector_keys_stream_carries_the_pooled_answers_once_revealed(app, teacher, parse_sse):
    code = start_lesson(teacher)
    key = teacher.get(f"/api/sessions/{code}").json()["projector_key"]
    wall = browser(app)
    assert wall.post(f"/api/sessions/{code}/projector", json={"key": key}).status_code == 204
    phone, _ = join(app, code, "Cy")
    item = go(teacher, code, stage=6)["item"]
    assert phone.post(f"/api/sessions/{code}/answers", json={"activity": "nsp", "item": item,
                                                             "answer": "NotNext"}).status_code == 201

    def first_events() -> dict:
        with wall.stream("GET", f"/api/sessions/{code}/events") as stream:
            body = ""
            for chunk in stream.iter_text():
                body += chunk
                if body.count("\n\n") >= 2:
                    break
        return dict(parse_sse(body))

    before = first_events()
    assert before["state"]["answered"] == 1 and before["results"]["items"] == []  # nothing before the reveal
    go(teacher, code, revealed=True)
    after = first_events()["results"]["items"]
    assert after[0]["item"] == item and after[0]["counts"] == {"IsNext": 0, "NotNext": 1} and after[0]["truth"]
    assert "participants" not in before["state"]  # still the class's view, not the teacher's
