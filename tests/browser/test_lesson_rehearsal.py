"""A lesson rehearsal (issues 25 and 34): one whole class in real browsers against a real
`python -m app` process. A teacher at 1280x720, a projector at 1280x720 and 1024x768 and three
phones at 390x844 go through the join, an NSP item and its reveal, Be the BERT, a concept check,
label together, going back to revealed items (with ← and with the activity buttons: the projector
keeps the reveal, a late student's answer is refused with 409), the leaderboard, a restart of the
server on an open item (SIGTERM with the phones connected: every screen says "Reconnecting…", a phone
takes no tap; back on the same port the line goes, no tap was taken, the phones follow the next item
and answer it), the fine-tune hand-off and the end. At each step it checks what a person in the room
would: nothing on the projector scrolls at either size or is cut off on the right, the item's text
and the pooled result are inside its screen; a phone answers without scrolling, never scrolls
sideways and does not jump after a tap; no visible text reads "[object Object]", "undefined", "NaN" or "null".
Screenshots of every step and screen go to tests/browser/screenshots/rehearsal/ (not committed;
REHEARSAL_SHOTS=/some/dir puts them elsewhere) for a person to look at."""
from __future__ import annotations

import os
import re
import signal
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from tests.app.run_servers import AUTH, TOKEN, free_port, server_process
from tests.browser.conftest import new_page
from tests.browser.stage import box, cut_sideways, inside, overflow, phone_page, programmer_words
from tests.conftest import SHIPPED_MODELS

pytestmark = pytest.mark.browser
PROJECTOR_SIZES = ((1280, 720), (1024, 768))
LINES = ["What a lovely day in the garden", "I have lost my keys again", "The cake was wonderful",
         "It rained all week and the roof leaks"]
FOLLOW_MS = 4000


class Server:
    """`python -m app` on the shipped models, on one port for its whole life (a restart comes back
    on it, as a teacher's laptop would), with the students' address as its --public-url."""

    def __init__(self, data: Path):
        self.data, self.port, self.stack = data, free_port(), ExitStack()
        self.url = f"http://127.0.0.1:{self.port}"
        self.start()

    def start(self):
        self.proc = self.stack.enter_context(server_process(
            SHIPPED_MODELS, self.data / "data", self.data / "server.log", "--public-url", self.url, port=self.port))[1]

    def sigterm(self) -> int:
        """SIGTERM, as a teacher's Ctrl-C; fails when it does not end (open event streams once kept it
        running for ever) instead of hanging the suite."""
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=60)
        self.stack.close()
        return rc


@pytest.fixture(scope="module")
def class_server(tmp_path_factory):
    server = Server(tmp_path_factory.mktemp("rehearsal"))
    yield server
    server.stack.close()


class Room:
    """The five screens of the rehearsal, with the checks every step makes on each."""

    def __init__(self, browser, base: str, shots: Path):
        self.browser, self.base, self.shots = browser, base, shots
        self.contexts, self.recorders, self.step = [], [], 0
        self.teacher = self.screen(1280, 720, login=True)
        self.projector = self.screen(1280, 720, login=True)
        self.phones = []

    def screen(self, width, height, login=False):
        context, page, rec = new_page(self.browser, self.base, width, height)
        self.contexts.append(context)
        self.recorders.append((rec, page))
        page.on("dialog", lambda d: d.accept())
        if login:
            page.goto(f"/login#token={TOKEN}")
            page.wait_for_url(re.compile(r"/teach"))
        return page

    def phone(self):
        context, page, rec = phone_page(self.browser, self.base)
        self.contexts.append(context)
        self.recorders.append((rec, page))
        self.phones.append(page)
        return page

    def look(self, name: str) -> None:
        """Every screen: no programmer's word; a screenshot of what it shows (not the whole page), the
        projector's at both sizes; nothing on the projector scrolls, no phone scrolls sideways."""
        self.step += 1
        screens = [("teacher", self.teacher), ("projector", self.projector)] + \
                  [(f"phone{k + 1}", p) for k, p in enumerate(self.phones)]
        for who, page in screens:
            page.screenshot(path=str(self.shots / f"{self.step:02d}-{name}-{who}.png"))
            words = programmer_words(page)
            assert not words, f"{name}: the {who} shows {words}"
            if who.startswith("phone"):
                assert overflow(page)["sideways"] <= 0, f"{name}: the {who} scrolls sideways: {overflow(page)}"
        self.stage_fits(name=name)

    def stage_fits(self, *selectors: str, name: str = "") -> None:
        """The projector at 1280x720 and at 1024x768: nothing to scroll, and each of `selectors` inside
        the screen."""
        p = self.projector
        for width, height in PROJECTOR_SIZES:
            p.set_viewport_size({"width": width, "height": height})
            p.wait_for_timeout(100)  # fit.js sizes the slide on the next frame after a resize
            if name and width != 1280:
                p.screenshot(path=str(self.shots / f"{self.step:02d}-{name}-projector{width}x{height}.png"))
            if overflow(p) != {"down": 0, "sideways": 0}:
                p.screenshot(path=str(self.shots / f"failed-after-{self.step:02d}-projector{width}.png"), full_page=True)
            assert overflow(p) == {"down": 0, "sideways": 0}, f"the projector scrolls at {width}x{height}: {overflow(p)}"
            for s in selectors:
                assert inside(p, s), f"{s} is not inside the projector's {width}x{height} screen: {box(p, s)}"
            assert not cut_sideways(p, *selectors), f"cut off at {width}x{height}: {cut_sideways(p, *selectors)}"
        p.set_viewport_size({"width": 1280, "height": 720})

    def forgive_the_restart(self, since: list[int]) -> None:
        """While the server was down every browser logged its refused connections: those only."""
        for (rec, _), n in zip(self.recorders, since):
            rec.console_errors[n:] = [e for e in rec.console_errors[n:] if "ERR_CONNECTION_REFUSED" not in e]

    def close(self):
        for rec, page in self.recorders:
            rec.assert_clean(page)
        for c in self.contexts:
            c.close()


def wait_text(page, selector: str, pattern: str, timeout: int = FOLLOW_MS) -> None:
    page.wait_for_function("([s, p]) => { const n = document.querySelector(s); return n && new RegExp(p).test(n.innerText); }",
                           arg=[selector, pattern], timeout=timeout)


def answer_in_view(phone, selector: str) -> None:
    """A phone answers without scrolling: the control is inside the screen with the page at the top."""
    phone.evaluate("window.scrollTo(0, 0)")
    assert inside(phone, selector), f"{selector} is below the phone's screen: {box(phone, selector)}"
    phone.click(selector)


def test_a_whole_lesson_on_the_projector_the_teacher_page_and_three_phones(browser, class_server, screenshots):
    shots = Path(os.environ.get("REHEARSAL_SHOTS") or screenshots / "rehearsal")
    shots.mkdir(parents=True, exist_ok=True)
    room = Room(browser, class_server.url, shots)
    try:
        t, pr = room.teacher, room.projector
        # the teacher starts a class with lines to label
        t.goto("/class")
        t.fill("#c-nsp", "3")
        t.fill("#c-lines", "\n".join(LINES))
        t.click("#c-create")
        t.wait_for_function("() => document.querySelector('#c-code').textContent.length === 7")
        code = t.evaluate("new URLSearchParams(location.search).get('code')")
        display = t.text_content("#c-code")
        link = t.get_attribute("#c-qr", "data-link")

        # the projector: the lobby is the code, the QR code and the joined count, no site chrome
        pr.goto(f"/class?code={code}&projector=1")
        pr.wait_for_function("(c) => document.querySelector('#c-code').textContent === c", arg=display)
        pr.wait_for_selector("#c-qr img.qr")
        pr.wait_for_function("() => document.querySelector('#c-qr img.qr').complete")
        for size in ((1280, 720), (1024, 768), (1920, 1080)):
            pr.set_viewport_size({"width": size[0], "height": size[1]})
            room.stage_fits("#c-code", "#c-qr img.qr", ".c-counts", "#c-url")
            assert not pr.is_visible("nav") and not pr.is_visible(".brand") and not pr.is_visible(".site-footer")
            assert pr.locator("#model-picker:visible").count() == 0
            assert not pr.is_visible(".c-bar") and not pr.is_visible("#c-people")
            qr = box(pr, "#c-qr img.qr")
            assert qr["height"] >= 0.4 * size[1], f"the QR code is too small to scan from the back: {qr}"
        pr.set_viewport_size({"width": 1280, "height": 720})

        # three phones join through the QR code's link; inside the class a phone shows the class only
        for k in range(3):
            phone = room.phone()
            phone.goto(link)
            phone.fill("#j-name", f"Student {k + 1}")
            phone.click("#j-go")
            phone.wait_for_selector("#j-class:not([hidden])")
            assert not phone.is_visible(".site-header") and phone.is_visible("#j-leave")
            assert re.fullmatch(r"[A-Z0-9]{3}-[A-Z0-9]{3}", phone.text_content("#j-rejoin-shown"))
        wait_text(pr, ".c-counts", "^3 joined")
        wait_text(t, "#c-joined", "^3$")
        room.look("lobby")
        # the teacher: every control on one screen, a visible remove button per nickname
        for s in ("#c-pages", "#c-prev", "#c-next", "#c-lock", "#c-reveal", "#c-pause", "#c-board", "#c-item",
                  "#c-people", "#c-end", "#c-csv", "#c-finetune"):
            assert inside(t, s), f"the teacher's {s} is not on the 1280x720 screen: {box(t, s)}"
        remove = t.locator(".c-remove").first
        colour = remove.evaluate("b => [getComputedStyle(b).color, getComputedStyle(b).backgroundColor]")
        assert colour[0] != colour[1] and remove.is_visible()

        # NSP: the item and its pooled answers on the projector; phones answer without scrolling
        t.click("#c-pages button[data-page='nsp']")
        wait_text(pr, "#c-item-h", "NSP class set")
        for phone in room.phones:
            wait_text(phone, "#j-title", "NSP class set · item 1 of 3")
        room.stage_fits(".c-join", "#c-item .c-seg-b", "#c-results")
        for phone, pick in zip(room.phones, ("IsNext", "NotNext", "IsNext")):
            answer_in_view(phone, f"#j-item button[data-answer='{pick}']")
            wait_text(phone, "#j-status", "Answer sent")
        wait_text(t, "#c-answered", "^3$")
        room.look("nsp-answered")
        t.keyboard.press("r")
        pr.wait_for_selector("#c-results .bar-row")
        wait_text(pr, "#c-results", "BERT says")
        for phone in room.phones:
            wait_text(phone, "#j-status", "The answer: ")
        room.stage_fits("#c-item .c-seg", "#c-results .bars", "#c-results .verdict")
        assert "NSP so far" in t.text_content("#c-summary")
        room.look("nsp-revealed")

        # Be the BERT: two hidden characters, the share right per character beside its bars
        t.click("#c-bert-add summary")
        t.fill("#c-bert-text", "to be or not to be")
        t.click("#c-bert-chars button[data-pos='3']")
        t.click("#c-bert-chars button[data-pos='4']")
        t.click("#c-bert-go")
        t.click("#c-bert-add summary")
        for phone, guess in zip(room.phones, ("be", "bx", "xy")):
            phone.wait_for_selector("#j-item input.c-mask")
            if guess == "xy":  # an empty box is not sent as a space (issue 51): the phone says which one is empty
                answer_in_view(phone, "#j-item .j-send")
                wait_text(phone, "#j-item", "Box 1 is empty")
            phone.click("#j-item input.c-mask >> nth=0")
            phone.keyboard.type(guess)  # the boxes fill one after the other, as one text box does
            answer_in_view(phone, "#j-item .j-send")
            wait_text(phone, "#j-status", "Answer sent")
        assert "NSP so far" not in t.text_content("#c-summary")  # only during the NSP set
        t.keyboard.press("r")
        wait_text(pr, "#c-results", "of the class got this one")
        room.stage_fits("#c-item .c-seg", "#c-results .c-mask-result", "#c-results > .verdict")
        shares = pr.locator("#c-results .c-share").all_inner_texts()
        assert shares == ["67 % of the class got this one", "33 % of the class got this one"], shares
        assert "33 % of the class got every hidden character right" in pr.text_content("#c-results")
        assert "left blank" not in pr.text_content("#c-results")  # no empty box counted as the class's guess
        wait_text(room.phones[2], "#j-status", "The answer: “be”")
        assert "You answered “xy”" in room.phones[2].text_content("#j-status")
        # the sentence itself shows the hidden characters once revealed (it kept the ▢ after the reveal)
        assert pr.text_content("#c-item .c-bert-line") == "to be or not to be", pr.text_content("#c-item .c-bert-line")
        room.look("bert-revealed")

        # concept check: the choices as text everywhere, the why after the reveal
        t.click("#c-pages button[data-page='concept']")
        first = httpx.get(f"{class_server.url}/api/sessions/{code}", headers=AUTH).json()["current"]["content"]
        for phone in room.phones:
            phone.wait_for_selector("#j-item .c-choices button")
            assert phone.locator("#j-item .c-choices button").all_inner_texts()[1].endswith(first["choices"][1])
        assert pr.locator("#c-item .c-choice-list li").all_inner_texts() == first["choices"]
        room.stage_fits("#c-item .c-question", "#c-item .c-choice-list")
        for phone, pick in zip(room.phones, ("1", "0", "1")):
            answer_in_view(phone, f"#j-item button[data-answer='{pick}']")
            wait_text(phone, "#j-status", "Answer sent")
        wait_text(t, "#c-answered", "^3$")
        room.look("concept-answered")
        t.keyboard.press("r")
        pr.wait_for_selector("#c-results .c-why")
        wait_text(room.phones[1], "#j-status", "The answer: B\\. ")
        wait_text(room.phones[1], "#j-status", "Why not: ")
        room.stage_fits("#c-item .c-question", "#c-results .c-answer-rows", "#c-results .c-explain")
        room.look("concept-revealed")
        # → opens the next question; ← goes back to the revealed one, still revealed everywhere
        t.keyboard.press("ArrowRight")
        wait_text(pr, "#c-item-h", "item 2 of")
        for phone in room.phones:
            wait_text(phone, "#j-title", "item 2 of")
        t.keyboard.press("ArrowLeft")
        wait_text(pr, "#c-item-h", "item 1 of")
        pr.wait_for_selector("#c-results .c-why")
        for phone in room.phones:
            wait_text(phone, "#j-title", "item 1 of")
            wait_text(phone, "#j-status", "The answer: B\\. ")
            assert all(b.is_disabled() for b in phone.locator("#j-item .c-choices button").all())
        room.stage_fits("#c-item .c-question", "#c-results .c-answer-rows", "#c-results .c-explain")
        room.look("concept-back")

        # label together: every line's text with its bars; a tap does not move the phone's page
        t.click("#c-pages button[data-page='label']")
        for phone in room.phones:
            phone.wait_for_selector("#j-item .j-line")
            wait_text(phone, "#j-title", "0 of 4 lines labelled")
            answer_in_view(phone, "#j-item .j-line:first-child button[data-answer='happy']")
        phone = room.phones[0]
        phone.wait_for_selector("#j-item .j-line.is-done")
        last = "#j-item .j-line:last-child button[data-answer='sad']"
        phone.locator(last).scroll_into_view_if_needed()
        before = phone.evaluate("scrollY")
        phone.click(last)
        wait_text(phone, "#j-title", "2 of 4 lines labelled")
        assert abs(phone.evaluate("scrollY") - before) <= 2, "the phone jumped after a tap"
        wait_text(pr, "#c-results", "answered")  # before the reveal: how many, never how
        assert "happy" not in pr.text_content("#c-results")
        assert pr.locator("#c-results .c-label-text").all_inner_texts() == LINES
        room.stage_fits("#c-results .c-label-rows")
        room.look("label")
        t.keyboard.press("r")
        wait_text(pr, "#c-results", "happy")
        for phone in room.phones:
            phone.wait_for_selector("#j-results .c-label-row")
            # every line's counts, not only the first's (issue 34: 0/0 on the others)
            assert len(phone.locator("#j-results .c-label-row").all()) == len(LINES)
        wait_text(t, "#c-where", "revealed")
        assert "open" not in t.text_content("#c-where"), t.text_content("#c-where")  # it said "all open · locked"
        room.look("label-revealed")

        # a late student arrives; the teacher goes back with the activity buttons to revealed items:
        # the projector keeps each reveal and the late answer is refused (issue 34: it scored)
        late = httpx.Client(base_url=class_server.url, timeout=30,
                            transport=httpx.HTTPTransport(local_address="127.0.6.2"))
        assert late.post(f"/api/sessions/{code}/join", json={"nickname": "Late"}).status_code == 200
        for page, shown in (("nsp", "BERT says"), ("fill", "of the class got this one")):
            t.click(f"#c-pages button[data-page='{page}']")
            wait_text(pr, "#c-results", shown)
            wait_text(t, "#c-where", "revealed")
            now = httpx.get(f"{class_server.url}/api/sessions/{code}", headers=AUTH).json()
            assert now["page"] == page and now["revealed"], now
            guess = {"nsp": "IsNext", "fill": "be"}[page]
            refused = late.post(f"/api/sessions/{code}/answers", json={"activity": page, "item": now["item"], "answer": guess})
            assert refused.status_code == 409 and refused.json()["parameter"] == "item", refused.text
            for phone in room.phones:
                wait_text(phone, "#j-status", "The answer")
            room.stage_fits("#c-item .c-seg", "#c-results")
            room.look(f"back-to-{page}")
        assert "Late" in t.text_content("#c-people")

        # the leaderboard fits the projector too
        t.click("#c-board")
        pr.wait_for_selector("#c-leaders:not([hidden]) li")
        room.stage_fits("#c-board-h", "#c-leaders")  # a screen of its own, with a heading
        for phone in room.phones:  # on a phone: on top, not under a long reveal
            phone.wait_for_selector("#j-leaders:not([hidden]) li")
            phone.evaluate("window.scrollTo(0, 0)")
            assert inside(phone, "#j-leaders li"), f"the leaderboard is below the phone's screen: {box(phone, '#j-leaders')}"
        room.look("leaderboard")
        t.click("#c-board")
        pr.wait_for_selector("#c-leaders", state="hidden")

        # Pause: every phone freezes
        t.keyboard.press("p")
        for phone in room.phones:
            phone.wait_for_selector("#j-paused:not([hidden])")
        room.look("paused")
        t.keyboard.press("p")
        for phone in room.phones:
            phone.wait_for_selector("#j-paused", state="hidden")

        # the server restarts mid-lesson with every browser connected, on an open item: SIGTERM ends it (its
        # event streams closed, not waited for); while it is away every screen says "Reconnecting…" and a
        # phone takes no tap (its buttons are closed, nothing is sent); it comes back on the same port, the
        # lines go, the open item is open again with no answer taken, and the phones follow the teacher on
        t.click("#c-pages button[data-page='nsp']")
        wait_text(pr, "#c-item-h", "item 1 of 3")
        t.keyboard.press("ArrowRight")
        for page in [t, pr, *room.phones]:
            wait_text(page, "#c-item-h, #j-title", "item 2 of 3")
        since = [len(rec.console_errors) for rec, _ in room.recorders]
        assert class_server.sigterm() in (0, -signal.SIGTERM)
        for page in [t, pr, *room.phones]:
            wait_text(page, "#c-reconnecting", "^Reconnecting to the class")
            assert inside(page, "#c-reconnecting"), f"the reconnecting line is off the screen: {box(page, '#c-reconnecting')}"
        tap = room.phones[0].locator("#j-item button[data-answer='IsNext']")
        asked = [len(rec.requests) for rec, _ in room.recorders]
        assert tap.is_disabled()
        tap.click(force=True)  # a tap while the server is away
        room.look("server-away")
        assert not [u for (rec, _), n in zip(room.recorders, asked) for u in rec.requests[n:] if u.endswith("/answers")]
        class_server.start()
        for page in [t, pr, *room.phones]:
            page.wait_for_selector("#c-reconnecting", state="hidden", timeout=30000)  # polled every 2 s while away
        room.phones[0].wait_for_function("() => !document.querySelector(\"#j-item button[data-answer='IsNext']\").disabled")
        assert room.phones[0].get_attribute("#j-item button[data-answer='IsNext']", "aria-pressed") == "false"
        assert t.text_content("#c-answered") == "0"  # the tap while away was not taken
        t.keyboard.press("ArrowRight")
        wait_text(pr, "#c-item-h", "item 3 of 3", timeout=30000)
        for phone in room.phones:
            wait_text(phone, "#j-title", "NSP class set · item 3 of 3", timeout=30000)
            answer_in_view(phone, "#j-item button[data-answer='NotNext']")
            wait_text(phone, "#j-status", "Answer sent")
            assert not phone.text_content("#error-box").strip(), phone.text_content("#error-box")
            assert not phone.is_visible("#j-paused") and not phone.is_visible("#c-reconnecting")
        wait_text(t, "#c-answered", "^3$")
        room.forgive_the_restart(since)
        room.look("after-the-restart")

        # the fine-tune hand-off is one click from the teacher's screen; then the end
        assert t.get_attribute("#c-finetune", "href") == f"/finetune?class={code}" and inside(t, "#c-finetune")
        t.click("#c-end")
        for phone in room.phones:
            wait_text(phone, "#j-title", "The session has ended")
        wait_text(pr, "#c-item-h", "The end")
        pr.wait_for_function("() => !document.querySelector('.c-join').checkVisibility()")  # no "Join at ... with the code" after the end
        room.look("end")
    finally:
        room.close()
