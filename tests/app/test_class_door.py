"""Issue 43 must 1: one join-code guesser behind a school's one address (a NAT) must not lock its
classmates out, and the teacher's "Let in" must always work, while the guesser learns nothing.

Once an address has spent its code guesses (app/classes/guard.py), every join from it is answered
alike, right code or wrong, so the answer is no oracle; a join with the right code also knocks: the
nickname waits at the door, the teacher sees it and lets it in, and the student's next try gets in."""
from __future__ import annotations

import pytest

from app.classes import door
from tests.app.class_kit import browser, go, served, start
from tests.app.test_class_room import spend_guesses

TOKEN = "door-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
NAT = "127.0.0.20"  # the school's one public address


@pytest.fixture
def app(tmp_path):
    with served(tmp_path / "data", TOKEN) as application:
        yield application


@pytest.fixture
def teacher(app):
    return browser(app, "127.0.0.1", headers=AUTH)


def knock(app, code: str, nickname: str):
    return browser(app, NAT).post(f"/api/sessions/{code}/join", json={"nickname": nickname})


def test_the_teacher_lets_in_a_nickname_past_a_guesser_on_the_same_address(app, teacher):
    code = start(teacher)
    spend_guesses(app, code, NAT)
    go(teacher, code, admit="LateLou")
    r = knock(app, code, "LateLou")
    assert r.status_code == 200, r.text  # was 429: the guard answered before `admit` was looked at
    assert r.json()["nickname"] == "LateLou"


def test_a_class_behind_a_guessers_address_knocks_and_the_teacher_lets_it_in(app, teacher):
    code = start(teacher)
    spend_guesses(app, code, NAT)
    right = [knock(app, code, name) for name in ("Ana", "Ben", "Cy")]
    wrong = [knock(app, "KMTKMT" if code != "KMTKMT" else "KMTKMA", name) for name in ("Ana", "Ben", "Cy")]
    # the same answer, right code or wrong: status, body and Retry-After (no oracle for the guesser)
    for r in right + wrong:
        assert r.status_code == 429 and r.json()["parameter"] == "code"
    assert {r.json()["detail"] for r in right} == {r.json()["detail"] for r in wrong}
    assert all(int(r.headers["Retry-After"]) >= 1 for r in right + wrong)
    assert "your teacher" in right[0].json()["detail"]
    # the teacher sees who knocked (nobody from the wrong code), and lets them in
    door.settled()  # the knocks are written after the answers
    state = teacher.get(f"/api/sessions/{code}").json()
    assert state["door"] == ["Ana", "Ben", "Cy"]
    assert browser(app).get(f"/api/sessions/{code}").json().get("door") is None  # the teacher's only
    state = go(teacher, code, let_in_door=True)
    assert state["door"] == [] and sorted(state["admitted"]) == ["ana", "ben", "cy"]
    for name in ("Ana", "Ben", "Cy"):  # each phone's next try gets in, past the guesser
        assert knock(app, code, name).status_code == 200
    assert teacher.get(f"/api/sessions/{code}").json()["joined"] == 3
    # the guesser is still refused, and a knock with the right code does not add a student
    assert knock(app, code, "Dee").status_code == 429
    assert teacher.get(f"/api/sessions/{code}").json()["joined"] == 3


def test_the_door_keeps_the_newest_knocks_and_a_nickname_once(app, teacher):
    code = start(teacher)
    spend_guesses(app, code, NAT)
    for k in range(40):
        knock(app, code, f"S{k}")
    knock(app, code, "s39")  # the same nickname again (case-folded): one entry
    door.settled()
    waiting = teacher.get(f"/api/sessions/{code}").json()["door"]
    assert len(waiting) == 30 and waiting[-1] == "s39" and waiting[0] == "S10"


def test_a_quiet_address_is_not_at_the_door(app, teacher):
    code = start(teacher)
    assert browser(app).post(f"/api/sessions/{code}/join", json={"nickname": "Eve"}).status_code == 200
    assert teacher.get(f"/api/sessions/{code}").json()["door"] == []
