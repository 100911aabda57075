"""Issue 53 musts 1 and 5: a guess is refused as a guess, never a 500, and never locks the teacher out.

- a rejoin code in any script (a student on a non-Latin keyboard) is a wrong rejoin code: 404 naming `rejoin`, one of the address's code guesses like any other;
- a guesser sending wrong instructor tokens from the teacher's own address (a school NAT) keeps
  getting 429s while the teacher, with the right token, logs in and calls the API every time."""
from __future__ import annotations

import threading
import time

import pytest

from app.classes.guard import CODE_BURST
from tests.app.class_kit import browser, join, served, start

# every budget here runs on a standing clock (tests/conftest.py): no test depends on the machine's speed
pytestmark = pytest.mark.usefixtures("standing_clock")

TOKEN = "guesses-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SAME_SITE = {"Sec-Fetch-Site": "same-origin"}


@pytest.fixture
def app(tmp_path):
    with served(tmp_path / "data", TOKEN) as application:
        yield application


@pytest.mark.parametrize("typed", ["É", "ÉÉÉÉÉÉ", "日本語", "\u202e\n"])
def test_a_rejoin_code_in_any_script_is_a_wrong_code_not_a_500(app, typed):
    code = start(browser(app, "127.0.0.1", headers=AUTH))
    assert join(app, code, "Lou")[1] == 200
    r = browser(app).post(f"/api/sessions/{code}/join", json={"nickname": "Lou", "rejoin": typed})
    assert r.status_code == 404, r.text
    assert r.json()["parameter"] == "rejoin"


def test_non_ascii_rejoin_codes_are_counted_as_guesses(app):
    """A 500 was not counted: a script could try rejoin codes without limit. Now each is a guess."""
    code = start(browser(app, "127.0.0.1", headers=AUTH))
    owner, status = join(app, code, "Lou")
    assert status == 200
    guesser = browser(app)
    statuses = [guesser.post(f"/api/sessions/{code}/join", json={"nickname": "Lou", "rejoin": "É" * (k % 6 + 1)})
                .status_code for k in range(CODE_BURST + 3)]
    assert statuses == [404] * CODE_BURST + [429] * 3, statuses
    assert owner.get(f"/api/sessions/{code}").status_code == 200


def test_the_teacher_gets_in_from_a_guessers_address(app):
    """A guesser on 127.0.0.1 sends wrong Bearer tokens ~18 times a second while the teacher, on the
    same address, logs in and calls the API: every one of the teacher's requests succeeds, and the
    guesser keeps getting 429 once its budget is spent."""
    guesser = browser(app, "127.0.0.1")
    wrong = [guesser.get("/api/sessions", headers={"Authorization": f"Bearer wrong-{k}"}).status_code
             for k in range(12)]
    assert wrong == [403] * 10 + [429] * 2, wrong  # the address's budget is spent before the teacher comes
    seen, stop = [], threading.Event()

    def guess():
        k = 0
        while not stop.is_set():
            k += 1
            seen.append(guesser.get("/api/sessions", headers={"Authorization": f"Bearer wrong-more-{k}"}).status_code)
            time.sleep(1 / 18)

    thread = threading.Thread(target=guess, daemon=True)
    thread.start()
    try:
        teacher = []
        for _ in range(10):
            page = browser(app, "127.0.0.1")
            login = page.post("/login", data={"token": TOKEN}, headers=SAME_SITE, follow_redirects=False)
            teacher.append(login.status_code)
            teacher.append(page.get("/api/sessions", headers=SAME_SITE).status_code)  # with its new cookie
            teacher.append(browser(app, "127.0.0.1", headers=AUTH).get("/api/sessions").status_code)
            teacher.append(browser(app, "127.0.0.1").post("/login", json={"token": TOKEN}, headers=SAME_SITE,
                                                          follow_redirects=False).status_code)
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(5)
    assert teacher == [303, 200, 200, 303] * 10, teacher
    assert seen and set(seen) == {429}, seen  # the guesser is still refused, every time
