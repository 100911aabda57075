"""Every screen of a lesson fits (issue 34), in real Chromium on the shipped models:
- the projector shows every reveal of every activity at 1280x720 and at 1024x768 with nothing to scroll
  (all three NSP items, Be the BERT with 1 to 6 hidden characters, every concept question, Label
  together), and the leaderboard as a screen of its own with a heading;
- on a revealed bar chart every bar's track is the same length, however long its row's note;
- the teacher's page is one 1280x720 screen whose roster shows thirty nicknames;
- a phone's join page keeps the Join button on its first screen after an error;
- every applet with ?projector=1 at 1280x720 shows its key result with nothing to scroll, each part
  of a page shown one at a time (← / →) included.
Screenshots go to tests/browser/screenshots/stage/ (STAGE_SHOTS=/dir puts them elsewhere)."""
from __future__ import annotations

import os
import re
from pathlib import Path

import httpx
import pytest

from tests.browser.conftest import new_page
from tests.browser.stage import box, inside, overflow, phone_page, programmer_words

pytestmark = pytest.mark.browser
TOKEN = "stage-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SIZES = [(1280, 720), (1024, 768)]
STUDENTS = 30
LINES = ["What a lovely day in the garden", "I have lost my keys again", "The cake was wonderful",
         "It rained all week and the roof leaks, and the long line goes on about the weather in the hills"]
SENTENCE = "To be, or not to be, that is the question"
HIDDEN = [3, 4, 10, 14, 17, 27]  # up to six characters, none a space


@pytest.fixture(scope="module")
def room(class_app, tmp_path_factory):
    with class_app(TOKEN, tmp_path_factory.mktemp("data"), join_burst=1000) as url:  # 30 students on 127.0.0.1
        yield url


@pytest.fixture(scope="module")
def shots(screenshots) -> Path:
    path = Path(os.environ.get("STAGE_SHOTS") or screenshots / "stage")
    path.mkdir(parents=True, exist_ok=True)
    return path


def fits(page, name: str, shots: Path, *selectors: str) -> None:
    """Nothing to scroll (waiting up to 3 s for the screen to settle), each selector inside the screen."""
    try:
        page.wait_for_function("() => document.documentElement.scrollHeight <= innerHeight && "
                               "document.documentElement.scrollWidth <= innerWidth", timeout=3000)
    except Exception:
        page.screenshot(path=str(shots / f"failed-{name}.png"), full_page=True)
    page.screenshot(path=str(shots / f"{name}.png"))
    assert overflow(page) == {"down": 0, "sideways": 0}, f"{name} scrolls: {overflow(page)}"
    for s in selectors:
        assert inside(page, s), f"{name}: {s} is not inside the screen: {box(page, s)}"
    assert not programmer_words(page), f"{name} shows {programmer_words(page)}"


def wait_text(page, selector: str, pattern: str) -> None:
    page.wait_for_function("([s, p]) => { const n = document.querySelector(s); return n && new RegExp(p).test(n.innerText); }",
                           arg=[selector, pattern], timeout=6000)


class Lesson:
    """A session with thirty students answering over HTTP, driven by the teacher's API."""

    def __init__(self, base: str):
        self.base = base
        made = httpx.post(f"{base}/api/sessions", headers=AUTH, json={"nsp_count": 3, "labels": ["happy", "sad", "angry"],
                                                                       "lines": LINES})
        assert made.status_code == 201, made.text
        self.code = made.json()["code"]
        self.students = []
        for k in range(STUDENTS):
            client = httpx.Client(base_url=base, headers={"Connection": "close"})
            joined = client.post(f"/api/sessions/{self.code}/join", json={"nickname": f"Student {k + 1}" + (" Longname" * (k % 3 == 0))})
            assert joined.status_code == 200, joined.text
            self.students.append(client)

    def items(self, page: str) -> dict[str, list[str]]:
        """Go to `page`; every activity's item ids."""
        return {act: [x["item"] for x in xs] for act, xs in self.put(page=page)["items"].items()}

    def put(self, **change) -> dict:
        r = httpx.put(f"{self.base}/api/sessions/{self.code}/state", headers=AUTH, json=change)
        assert r.status_code == 200, r.text
        return r.json()

    def answer(self, activity: str, item: str, pick) -> None:
        for k, client in enumerate(self.students):
            if pick(k) is not None:
                client.post(f"/api/sessions/{self.code}/answers", json={"activity": activity, "item": item, "answer": pick(k)})

    def bert(self, hidden: int) -> str:
        r = httpx.post(f"{self.base}/api/sessions/{self.code}/items", headers=AUTH,
                       json={"activity": "fill", "text": SENTENCE, "positions": HIDDEN[:hidden]})
        assert r.status_code == 201, r.text
        return r.json()["item"]

    def close(self):
        for client in self.students:
            client.close()


def logged_in(browser, base: str):
    """(context, page, recorder) of an instructor's browser at 1280x720."""
    context, page, rec = new_page(browser, base, 1280, 720)
    page.goto(f"/login#token={TOKEN}")
    page.wait_for_url(re.compile(r"/train"))
    return context, page, rec


def both_sizes(page, name: str, shots: Path, *selectors: str) -> None:
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        fits(page, f"{name}-{width}x{height}", shots, *selectors)
    page.set_viewport_size({"width": 1280, "height": 720})


def test_every_reveal_of_every_activity_fits_the_projector_at_both_sizes(browser, room, shots):
    lesson = Lesson(room)
    context, pr, rec = logged_in(browser, room)
    try:
        items = lesson.items("nsp")
        pr.goto(f"/class?code={lesson.code}&projector=1")

        for n, item in enumerate(items["nsp"], 1):
            lesson.put(page="nsp", item=item)
            lesson.answer("nsp", item, lambda k: "IsNext" if k % 3 else "NotNext")
            lesson.put(revealed=True)
            wait_text(pr, "#c-results", "BERT says")
            both_sizes(pr, f"nsp{n}-revealed", shots, "#c-item .c-seg-b", "#c-results .bars", "#c-results .verdict")
            tracks = pr.eval_on_selector_all("#c-results .bar-track", "ts => ts.map((t) => t.getBoundingClientRect().width)")
            assert len(tracks) == 2 and abs(tracks[0] - tracks[1]) <= 1, f"bar tracks of different lengths: {tracks}"

        for hidden in range(1, 7):
            item = lesson.bert(hidden)
            lesson.put(page="fill", item=item)
            lesson.answer("fill", item, lambda k: "".join("beotn "[(k + j) % 6] for j in range(hidden)) if k < STUDENTS - 2 else None)
            lesson.put(revealed=True)
            wait_text(pr, "#c-results", "of the class got this one")
            # the projector redraws on the event: wait for this item's boxes, not the last item's reveal
            pr.wait_for_function("n => document.querySelectorAll('#c-results .c-mask-box').length === n", arg=hidden,
                                 timeout=15_000)
            assert pr.locator("#c-results .c-mask-box").count() == hidden
            both_sizes(pr, f"bert{hidden}-revealed", shots, "#c-item .c-seg", f"#c-results .c-mask-box:nth-child({hidden}) .bars")
            widths = pr.locator("#c-results .c-mask-box:first-child .bars").first.evaluate(
                "l => [...l.querySelectorAll('.bar-track')].filter((t) => t.offsetParent).map((t) => t.getBoundingClientRect().width)")
            assert widths and max(widths) - min(widths) <= 1, f"bar tracks of different lengths: {widths}"

        for n, item in enumerate(items["concept"], 1):
            lesson.put(page="concept", item=item)
            lesson.answer("concept", item, lambda k: str(k % 4))
            lesson.put(revealed=True)
            pr.wait_for_selector("#c-results .c-explain")
            wait_text(pr, "#c-item-h", f"item {n} of")
            both_sizes(pr, f"concept{n}-revealed", shots, "#c-item .c-question", "#c-results .c-answer-rows", "#c-results .c-explain")

        lesson.put(page="label")
        for item in items["label"]:
            lesson.answer("label", item, lambda k: ["happy", "sad", "angry"][k % 3])
        lesson.put(revealed=True)
        wait_text(pr, "#c-results", "happy")
        both_sizes(pr, "label-revealed", shots, "#c-results .c-label-rows")

        # the leaderboard: a screen of its own, with a heading, on a concept reveal too
        lesson.put(page="concept", item=items["concept"][17], leaderboard=True)
        pr.wait_for_selector("#c-leaders:not([hidden]) li")
        both_sizes(pr, "leaderboard", shots, "#c-board-h", "#c-leaders")
        assert pr.locator("#c-leaders li").count() >= 10
        assert not pr.is_visible("#c-results") and "Leaderboard" in pr.text_content("#c-board-h")
        lesson.put(leaderboard=False)
        rec.assert_clean(pr)
    finally:
        context.close()
        lesson.close()


def test_the_teachers_page_is_one_screen_with_thirty_names_in_its_roster(browser, room, shots):
    lesson = Lesson(room)
    context, t, rec = logged_in(browser, room)
    try:
        items = lesson.items("concept")
        lesson.put(item=items["concept"][17])
        lesson.answer("concept", items["concept"][17], lambda k: str(k % 4))
        lesson.put(revealed=True)
        for width, height in SIZES:
            t.set_viewport_size({"width": width, "height": height})
            t.goto(f"/class?code={lesson.code}")
            t.wait_for_selector("#c-results .c-explain")
            wait_text(t, "#c-joined", f"^{STUDENTS}$")
            fits(t, f"teacher-{width}x{height}", shots, "#c-pages", "#c-reveal", "#c-board", "#c-item-h", "#c-people",
                 "#c-end", "#c-csv", "#c-finetune")
            shown = t.evaluate("""() => { const r = document.querySelector('#c-people').getBoundingClientRect();
              return [...document.querySelectorAll('#c-people li')].filter((li) => { const b = li.getBoundingClientRect();
                return b.height > 0 && b.top >= r.top - 1 && b.bottom <= r.bottom + 1 && b.bottom <= innerHeight; }).length; }""")
            assert shown == STUDENTS, f"the roster shows {shown} of {STUDENTS} names without scrolling at {width}x{height}"
        rec.assert_clean(t)
    finally:
        context.close()
        lesson.close()


def test_a_phone_keeps_the_join_button_in_view_after_an_error(browser, room, shots):
    context, phone, rec = phone_page(browser, room)
    try:
        phone.goto("/join")
        assert not phone.is_visible(".site-header") and not phone.is_visible(".site-footer")
        phone.fill("#j-code", "ZZZ-999")
        phone.fill("#j-name", "Ana")
        phone.click("#j-go")
        phone.wait_for_function("() => document.querySelector('#error-box').innerText.trim().length > 0")
        fits(phone, "join-error-390x844", shots, "#error-box", "#j-code", "#j-name", "#j-go")
    finally:
        context.close()


# each applet's key result; a page in parts lists one selector per part (→ moves to the next)
APPLETS = {
    "/generate": [["#g-step", "#g-text", "#g-dists .dist-panel[data-dist='raw'] .bars",
                   "#g-dists .dist-panel[data-dist='tempered'] .bars", "#g-dists .dist-panel[data-dist='final'] .bars"]],
    "/mask-fill": [["#mf-chars", "#mf-results .bars"]],
    "/nsp": [["#n-seq", "#n-isnext", "#n-notnext"]],
    "/attention": [["#a-text", "#a-gpt-grid table", "#a-bert-grid table"], ["#aw-layer", "#aw-gpt table", "#aw-bert table"]],
    "/compare": [["#c-strip", "#c-verdict"]],
    "/objectives": [["#o-gpt-toks", "#o-bert-toks", "#o-summary"], ["#o-rtd-h", "#o-rtd"], ["#o-rec-h", "#o-run"],
                    ["#o-perm-h", "#o-perm"], ["#o-nsp-h"], ["#o-cmp-h", "#o-cards"]],
    "/concepts": [["#q-list .q-card.is-current"]],
    "/train": [["#t-run-h"]],
    "/finetune": [["#ft-job-h", "#ft-plot"]],
}


@pytest.mark.parametrize("path", list(APPLETS))
def test_every_applet_is_a_slide_on_the_projector(browser, room, shots, path):
    context, page, rec = new_page(browser, room, 1280, 720)  # the shipped models, as in a class
    try:
        on_the_stage(page, rec, shots, path)
    finally:
        context.close()


def on_the_stage(page, rec, shots, path: str) -> None:
    page.goto(path + "?projector=1")
    page.wait_for_load_state("load")
    name = "applet" + path.replace("/", "-")
    for k, part in enumerate(APPLETS[path], 1):
        for s in part:
            page.wait_for_selector(s, state="visible", timeout=10_000)
        fits(page, f"{name}-{k}", shots, *part)
        page.keyboard.press("ArrowRight")
    if path == "/generate":  # a knob moves: the distribution before and after it stay side by side
        page.locator("#g-temp").fill("0.5")
        page.wait_for_function("() => /0\\.50/.test(document.querySelector('#g-temp-out').textContent)")
        page.wait_for_timeout(800)
        fits(page, f"{name}-temperature", shots, *APPLETS[path][0])
    if path == "/nsp":  # answered: BERT's answer and the truth on the same screen
        page.click("#n-isnext")
        page.wait_for_function("() => document.querySelector('#n-result').innerText.trim().length > 0")
        fits(page, f"{name}-answered", shots, "#n-seq", "#n-result")
    rec.assert_clean(page)
