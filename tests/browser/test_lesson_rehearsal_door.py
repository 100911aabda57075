"""The lesson rehearsal at the door (issue 43 must 1), with the screens and checks of
tests/browser/test_lesson_rehearsal.py on a real `python -m app` process: every browser here is on
127.0.0.1, as a class behind one school address (a NAT) is. Two phones join; then a guesser on that
same address sends wrong join codes until the address's guesses are spent (app/classes/guard.py:
CODE_BURST at once, then one every CODE_EVERY_S) and keeps guessing, one code a second, for the
rest of the rehearsal. A third student with the right code cannot be told apart from the guesser
(app/classes/door.py: every code from a spent address gets the same 429, right or wrong), so the
join page says so calmly and keeps trying while the student waits at the door; the teacher's screen
shows "At the door … LateLou" and "Let them in"; one click and the phone is in the lobby with its
classmates, while the guesser is still refused (a wrong code, and the right one too). The class then
goes on: the three phones follow the teacher to an NSP item and answer it."""
from __future__ import annotations

import itertools
import os
import random
import threading
import time
from pathlib import Path

import httpx
import pytest

from app.classes.codes import ALPHABET
from app.classes.guard import CODE_BURST, CODE_EVERY_S
from tests.browser.test_lesson_rehearsal import Room, Server, answer_in_view, wait_text

pytestmark = pytest.mark.browser
LATE = "LateLou"


@pytest.fixture(scope="module")
def door_server(tmp_path_factory):
    server = Server(tmp_path_factory.mktemp("rehearsal-door"))
    yield server
    server.stack.close()


class Guesser:
    """Wrong join codes from the students' address: `spend()` until refused (the address's budget is
    then empty: the next guess it gets back is CODE_EVERY_S away), and `keep()`, one wrong code every
    half second on a thread of its own until `stop()`, which returns what each got and for how long."""

    def __init__(self, base: str, code: str):
        self.base, self.code, self.statuses, self.done = base, code, [], threading.Event()
        self.client = self.connect()
        rng = random.Random(43)
        self.codes = ("".join(rng.choice(ALPHABET) for _ in range(6)) for _ in itertools.count())

    def connect(self) -> httpx.Client:
        return httpx.Client(base_url=self.base, timeout=30, headers={"Connection": "close"})

    def guess(self, code: str | None = None, client: httpx.Client | None = None) -> httpx.Response:
        wrong = next(c for c in self.codes if c != self.code)
        return (client or self.client).post(f"/api/sessions/{code or wrong}/join", json={"nickname": "x"})

    def spend(self) -> list[int]:
        statuses = []
        while not statuses or statuses[-1] != 429:
            statuses.append(self.guess().status_code)
            assert len(statuses) <= 3 * CODE_BURST, statuses
        return statuses

    def keep(self) -> None:
        def loop():
            with self.connect() as client:
                while not self.done.wait(0.5):
                    self.statuses.append(self.guess(client=client).status_code)
        self.started = time.monotonic()
        self.thread = threading.Thread(target=loop, daemon=True)
        self.thread.start()

    def stop(self) -> tuple[list[int], float]:
        self.done.set()
        self.thread.join(timeout=30)
        return self.statuses, time.monotonic() - self.started


def test_a_student_behind_a_guessers_address_gets_in_at_the_door(browser, door_server, screenshots):
    shots = Path(os.environ.get("REHEARSAL_SHOTS") or screenshots / "rehearsal-door")
    shots.mkdir(parents=True, exist_ok=True)
    room = Room(browser, door_server.url, shots)
    guesser = None
    try:
        t, pr = room.teacher, room.projector
        t.goto("/class")
        t.fill("#c-nsp", "3")
        t.click("#c-create")
        t.wait_for_function("() => document.querySelector('#c-code').textContent.length === 7")
        code = t.evaluate("new URLSearchParams(location.search).get('code')")
        link = t.get_attribute("#c-qr", "data-link")
        pr.goto(f"/class?code={code}&projector=1")
        for k in range(2):
            phone = room.phone()
            phone.goto(link)
            phone.fill("#j-name", f"Student {k + 1}")
            phone.click("#j-go")
            phone.wait_for_selector("#j-class:not([hidden])")
        wait_text(pr, ".c-counts", "^2 joined")

        # a guesser on the class's address spends its guesses (wrong codes answer 404, until 429), and at
        # once a classmate there types the right code: the same 429, so it waits at the door
        guesser = Guesser(door_server.url, code)
        late = room.phone()
        late.goto("/join")  # typed, not scanned: the QR link's key would get past the spent address at once
        late.fill("#j-code", code)
        late.fill("#j-name", LATE)
        spent = guesser.spend()
        late.click("#j-go")  # within the CODE_EVERY_S before the address's next guess
        guesser.keep()
        assert spent.count(404) >= CODE_BURST and set(spent[:-1]) == {404}, spent
        wait_text(late, "#j-form", "at the door")
        assert not late.text_content("#error-box").strip() and late.is_visible("#j-form")  # a calm note, not a red error
        t.wait_for_selector("#c-door:not([hidden])", timeout=10_000)
        wait_text(t, "#c-door-names", f"At the door .*{LATE}")
        assert t.text_content("#c-door-in").startswith("Let them in")
        room.look("at-the-door")

        # the teacher lets them in: the phone, trying again by itself, is in the lobby with the class
        t.click("#c-door-in")
        late.wait_for_selector("#j-class:not([hidden])", timeout=15_000)  # it tries every 5 s
        wait_text(late, "#j-title", "Waiting for the teacher")
        assert late.text_content("#j-me") == LATE and not late.text_content("#error-box").strip()
        wait_text(pr, ".c-counts", "^3 joined")
        wait_text(t, "#c-joined", "^3$")
        t.wait_for_selector("#c-door", state="hidden")
        room.look("let-in")
        rec = next(r for r, page in room.recorders if page is late)  # its refused tries, logged by the browser
        rec.console_errors[:] = [e for e in rec.console_errors if "status of 429" not in e]

        # the class goes on behind that address: every phone follows the teacher and answers
        t.click("#c-pages button[data-page='nsp']")
        for phone in room.phones:
            wait_text(phone, "#j-title", "NSP class set · item 1 of 3")
            answer_in_view(phone, "#j-item button[data-answer='IsNext']")
            wait_text(phone, "#j-status", "Answer sent")
        wait_text(t, "#c-answered", "^3$")
        room.look("answered-behind-the-guesser")

        # the guesser all along: refused, but for one code looked up every CODE_EVERY_S (20 a minute of 23**6
        # codes, door.py), none of them let in; and once spent, the right code gets the same 429 as a wrong one
        kept, seconds = guesser.stop()
        assert set(kept) <= {404, 429} and kept.count(429) > kept.count(404), kept
        assert kept.count(404) <= seconds / CODE_EVERY_S + 1, (kept, seconds)
        guesser.spend()
        right = guesser.guess(code)
        assert right.status_code == 429 and right.json()["parameter"] == "code", right.text
    finally:
        if guesser is not None:
            guesser.done.set()
            guesser.client.close()
        room.close()
