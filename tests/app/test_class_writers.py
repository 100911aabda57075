"""Issue 53 must 7: a joined student's writes have a budget of their own (app/classes/writers.py). A
student looping answers (each a 409) or its own join is refused past WRITE_BURST with a 429 naming
`code`, while its classmates (on its address too) and the teacher are served, and a real student (a
double-tap, a rejoin after a reload, a fast labeller) is never refused.

Every budget runs on the standing clock (tests/conftest.py): time moves only when a test moves
it, so nothing here depends on how fast this machine sends requests. Refusals are answered at once
here (pause_s 0), except in the one test of the pause."""
from __future__ import annotations

import time

import pytest

from app.classes.writers import (ADDRESS_WRITE_BURST, ADDRESS_WRITE_EVERY_S, WRITE_BURST, WRITE_EVERY_S,
                                 WRITE_REFUSAL_PAUSE_S, Writers)
from tests.app.class_kit import browser, go, join, start
from tests.app.test_class_door import AUTH, TOKEN, app, teacher  # noqa: F401 (the fixtures: the app, its teacher)

NAT = "127.0.0.40"  # a school's one address: the looper and two classmates behind it


@pytest.fixture
def clock(app, standing_clock):
    app.state.class_writers = Writers(pause_s=0.0)  # on the standing clock; refusals answered at once
    return standing_clock


def answer(student, code: str, item: str, choice: str = "IsNext", activity: str = "nsp"):
    return student.post(f"/api/sessions/{code}/answers", json={"activity": activity, "item": item, "answer": choice})


def refused(r) -> bool:
    if r.status_code != 429:
        return False
    assert r.json()["parameter"] == "code" and int(r.headers["Retry-After"]) >= 1, r.text
    return True


def test_a_student_looping_answers_is_refused_past_its_burst_and_the_class_is_served(app, teacher, clock):
    code = start(teacher)
    looper, *classmates = [join(app, code, name, NAT)[0] for name in ("Loop", "Ana", "Ben")]
    item = go(teacher, code, page="nsp")["item"]
    statuses = [answer(looper, code, item).status_code for _ in range(WRITE_BURST + 10)]
    # the burst: its answer, then 409s (already answered); past it, 429s (nothing refills: time stands still)
    assert statuses[0] == 201 and statuses[1:WRITE_BURST] == [409] * (WRITE_BURST - 1)
    assert statuses[WRITE_BURST:] == [429] * 10
    assert refused(answer(looper, code, item))
    # its classmates, on its own address, each spend their own budget; the teacher reads as before
    assert [answer(s, code, item, "NotNext").status_code for s in classmates] == [201, 201]
    assert teacher.get(f"/api/sessions/{code}/results").json()["items"][0]["answered"] == 3
    # one write comes back every WRITE_EVERY_S (a hair more: on a clock of ~1e4 s the float sum can
    # leave the bucket a hair under one token)
    clock.advance(WRITE_EVERY_S + 1e-6)
    assert answer(looper, code, item).status_code == 409
    assert refused(answer(looper, code, item))


def test_a_student_looping_its_own_join_spends_the_same_budget(app, teacher, clock):
    code = start(teacher)
    looper, status = join(app, code, "Loop", NAT)
    assert status == 200
    url = f"/api/sessions/{code}/join"
    rejoins = [looper.post(url, json={"nickname": "Loop"}).status_code for _ in range(WRITE_BURST + 5)]
    assert rejoins == [200] * WRITE_BURST + [429] * 5  # its own participant back, then refused
    assert refused(looper.post(url, json={"nickname": "Loop"}))
    item = go(teacher, code, page="nsp")["item"]
    assert refused(answer(looper, code, item))  # answers and joins: one budget
    # a classmate on the same address joins (a new nickname: not this budget) and answers
    mate, status = join(app, code, "Ana", NAT)
    assert status == 200 and answer(mate, code, item).status_code == 201


def test_a_normal_student_is_never_refused(app, teacher, clock):
    """Every tap double (the second a 409), a rejoin after a reload, then Label together at one line a
    second, each line double-tapped: the fastest real student there is, with room to spare."""
    lines = [f"line {k}" for k in range(60)]
    code = start(teacher, nsp_count=1, labels=["happy", "sad"], lines=lines)
    student, status = join(app, code, "Ana")
    assert status == 200
    item = go(teacher, code, page="nsp")["item"]
    assert [answer(student, code, item).status_code for _ in range(2)] == [201, 409]  # the double-tap's 409
    assert student.post(f"/api/sessions/{code}/join", json={"nickname": "Ana"}).status_code == 200  # a reload
    go(teacher, code, page="label")
    for k in range(len(lines)):
        clock.advance(1.0)
        got = [answer(student, code, f"l{k + 1}", "happy", "label").status_code for _ in range(2)]
        assert got == [201, 409], (k, got)


def test_writes_without_a_students_cookie_spend_their_address_budget(app, teacher, clock):
    code = start(teacher)
    student, _ = join(app, code, "Ana", NAT)
    item = go(teacher, code, page="nsp")["item"]
    stranger = browser(app, NAT)  # no cookie: every answer a 403, each a write of its address's budget
    statuses = [answer(stranger, code, item).status_code for _ in range(ADDRESS_WRITE_BURST + 3)]
    assert statuses == [403] * ADDRESS_WRITE_BURST + [429] * 3
    forged = browser(app, NAT, cookies={f"pp_class_{code}": "made-up"})
    assert refused(answer(forged, code, item))  # a made-up cookie is no student: its address pays
    assert answer(student, code, item).status_code == 201  # the student behind that address is not refused
    clock.advance(ADDRESS_WRITE_EVERY_S + 1e-6)  # a hair more, as above
    assert answer(stranger, code, item).status_code == 403


def test_a_refused_write_is_answered_after_the_pause(app, teacher, standing_clock):
    """A refused write waits WRITE_REFUSAL_PAUSE_S before its 429, so a loop on N connections sends at most
    N writes a second (only a script is ever refused, so nobody real waits). A lower bound: sleeping
    never takes less than asked, however busy the machine."""
    code = start(teacher)
    looper, _ = join(app, code, "Loop")
    url = f"/api/sessions/{code}/join"
    assert [looper.post(url, json={"nickname": "Loop"}).status_code for _ in range(WRITE_BURST)] == [200] * WRITE_BURST
    t0 = time.monotonic()
    assert refused(looper.post(url, json={"nickname": "Loop"}))
    assert time.monotonic() - t0 >= WRITE_REFUSAL_PAUSE_S



def test_a_loop_of_joins_with_a_taken_nickname_and_no_cookie_is_refused_past_the_address_writes(app, teacher, clock):
    """Each such join is refused (409) after its write, and guard.py gives its new nickname back, so
    it was budgeted nowhere: now each spends one of its address's writes, and past them it is a 429
    before any database work, while a classmate on another address still joins."""
    code = start(teacher)
    assert join(app, code, "Ana", "127.0.0.31")[1] == 200
    loop = browser(app, "127.0.0.32")
    statuses = []
    for _ in range(ADDRESS_WRITE_BURST + 2):
        loop.cookies.clear()
        statuses.append(loop.post(f"/api/sessions/{code}/join", json={"nickname": "Ana"}).status_code)
    assert statuses == [409] * ADDRESS_WRITE_BURST + [429] * 2, statuses
    assert join(app, code, "Ben", "127.0.0.33")[1] == 200
    clock.advance(ADDRESS_WRITE_EVERY_S * 1.01)
    loop.cookies.clear()
    assert loop.post(f"/api/sessions/{code}/join", json={"nickname": "Ana"}).status_code == 409


def test_a_spent_addresss_refused_joins_spend_its_writes_alike_for_a_right_code_and_a_wrong_one(app, teacher, clock):
    """The door answers a right code and a wrong one with the same 429 but not in the same time
    (app/classes/door.py): each such try spends one of the address's writes, so a timing prober is
    refused before any code is looked at once they are spent, right code or wrong."""
    from tests.app.test_class_room import spend_guesses

    code = start(teacher)
    spend_guesses(app, code, NAT)
    wrong = "KMTKMT" if code != "KMTKMT" else "KMTKMA"
    prober = browser(app, NAT)
    details = [prober.post(f"/api/sessions/{code if k % 2 else wrong}/join", json={"nickname": f"p{k}"}).json()["detail"]
               for k in range(ADDRESS_WRITE_BURST + 2)]
    door_says, budget_says = details[0], details[-1]
    assert details == [door_says] * ADDRESS_WRITE_BURST + [budget_says] * 2 and door_says != budget_says
    assert "too many answers or joins" in budget_says
