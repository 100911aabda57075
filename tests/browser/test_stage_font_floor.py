"""Issue 50 must 5: the class stage is readable from the back row. On the projector
(/class?code=CODE&projector=1, the instructor logged in) at 1024x768 and at 1280x720, every stage of a
class (the lobby, the join screen over an item (J), an NSP item open, paused, locked and revealed, Be
the BERT open and revealed, a concept question open and revealed, Label together open and revealed,
the leaderboard, the "Reconnecting…" line and the end) shows

- its running text at 24 CSS px at least: the sentences the room reads, the item itself and what is
  said about it: NSP's two segments and its question, Be the BERT's sentence, a concept question,
  its choices and its explanation, Label together's lines, the verdicts ("BERT says …", "… of the
  class got it right"), the end screen's title and score, the "Reconnecting…" line, the lobby's
  join sentence ("Join at … with the code") and a screen's only line ("This activity has no items yet.");
- every label at 18 CSS px at least: every other text, the words around the running text: bar
  labels, percentages and notes ("14 answers · ✔ truth · BERT"), counts ("12 answered"), small
  headings ("NSP class set · item 1 of 1", "Segment A", "Hidden character 2: it was “e”"), captions
  ("60 % of the class got this one", and the "Why not: …" under a wrong choice's bar: the longest
  question's 1,061 characters all at 24 px would not fit 1024x768), the names at the top of the class
  and on the leaderboard, the slim strip's address, code and counts.

Measured: the computed font size of every element with a non-empty text node of its own that is
rendered (checkVisibility with opacity and visibility), on the screen, and not inside aria-hidden or
.sr-only. Left out: the site header's two faint corner buttons ("Copy link", "Projector mode", drawn
at 30 % opacity for the operator, not the room: static/style.css). Each stage must also have nothing
to scroll and nothing cut on the right (the fit-to-screen helper, static/lib/fit.js, shrinks the type
of a tall stage; the floors hold through it), and the "Reconnecting…" line lies over the strip with
the code, not over the stage. Before the reveal the NSP stage shows both segments and the question,
"Is B the next sentence after A?".

The content is each activity's tallest: the NSP item of the shipped bank with the most lines, the
concept question with the most words, six hidden characters, four lines to label one of which wraps.
Screenshots go to tests/browser/screenshots/font-floor/ (FONT_SHOTS=/dir puts them elsewhere)."""
from __future__ import annotations

import json
import math
import os
import random
import re
from pathlib import Path

import httpx
import pytest

from tests.browser.conftest import new_page
from tests.browser.stage import cut_sideways, overflow

pytestmark = pytest.mark.browser
TOKEN = "font-floor-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SIZES = [(1024, 768), (1280, 720)]
RUNNING_PX, LABEL_PX = 24, 18
STUDENTS = 12
LABELS = ["happy", "sad", "angry"]
LINES = ["What a lovely day in the garden", "I have lost my keys again", "The cake was wonderful",
         "It rained all week and the roof leaks, and the long line goes on about the weather in the hills"]
SENTENCE = "To be, or not to be, that is the question"
HIDDEN = [3, 4, 10, 14, 17, 27]
CONCEPT = "in-context"  # the longest question with its choices, whys and explanation (app/concepts.json)
NSP_QUESTION = "Is B the next sentence after A?"
# running text, as defined above: an element inside one of these; every other text is a label
RUNNING = (".c-seg, .c-question, .c-nsp-question, .c-choice-list li, .c-answer-text, .c-explain, .verdict, "
           ".c-label-text, .c-end-title, .c-end-score, .c-reconnecting, .is-lobby #c-code-h, #c-item > p.note")

MEASURE = """(running) => {
  const out = [];
  const seen = (n) => n.checkVisibility({ opacityProperty: true, visibilityProperty: true });
  for (const n of document.body.querySelectorAll('*')) {
    const own = [...n.childNodes].filter((c) => c.nodeType === Node.TEXT_NODE).map((c) => c.textContent).join('').trim();
    if (!own || n.closest('[aria-hidden="true"], .sr-only, .site-header, script, style, template') || !seen(n)) continue;
    const r = n.getBoundingClientRect();
    if (r.width < 1 || r.height < 1 || r.bottom <= 0 || r.right <= 0 || r.top >= innerHeight || r.left >= innerWidth) continue;
    const what = n.tagName.toLowerCase() + (n.id ? '#' + n.id : '') + [...n.classList].map((c) => '.' + c).join('');
    out.push({ what, text: own.replace(/\\s+/g, ' ').slice(0, 48), px: parseFloat(getComputedStyle(n).fontSize),
               running: !!n.closest(running) });
  }
  return out;
}"""


def tallest_nsp(bank: list[dict]) -> str:
    """The item whose taller segment has the most lines at 30 characters a line (a segment keeps its line
    breaks; the projector shows A beside B, about 30 characters each at 1024 px); then the most in all."""
    lines = lambda s: sum(max(1, math.ceil(len(x) / 30)) for x in s.split("\n"))  # noqa: E731
    return max(bank, key=lambda it: (max(lines(it["a"]), lines(it["b"])), lines(it["a"]) + lines(it["b"])))["id"]


def seed_for(bank: list[dict], wanted: str) -> int:
    """An nsp_seed whose class set of one is `wanted` (app/classes/service.py plan_for draws the set so)."""
    ids = [it["id"] for it in bank]
    return next(s for s in range(1_000_000) if random.Random(s).sample(ids, 1)[0] == wanted)


@pytest.fixture(scope="module")
def room(class_app, tmp_path_factory):
    with class_app(TOKEN, tmp_path_factory.mktemp("data"), join_burst=1000) as url:  # every student on 127.0.0.1
        yield url


@pytest.fixture(scope="module")
def shots(screenshots) -> Path:
    path = Path(os.environ.get("FONT_SHOTS") or screenshots / "font-floor")
    path.mkdir(parents=True, exist_ok=True)
    return path


class Class:
    """A session on the tallest content with STUDENTS answering over HTTP, driven by the teacher's API."""

    def __init__(self, base: str, students: int = STUDENTS):
        from tests.conftest import SHIPPED_MODELS

        bank = json.loads((SHIPPED_MODELS / "nsp_quiz.json").read_text())["items"]
        self.nsp = tallest_nsp(bank)
        self.nsp_text = next(it for it in bank if it["id"] == self.nsp)
        self.base = base
        made = httpx.post(f"{base}/api/sessions", headers=AUTH, json={
            "nsp_count": 1, "nsp_seed": seed_for(bank, self.nsp), "concepts": [CONCEPT], "labels": LABELS, "lines": LINES})
        assert made.status_code == 201, made.text
        self.code = made.json()["code"]
        self.students = []
        for k in range(students):
            client = httpx.Client(base_url=base, headers={"Connection": "close"})
            nickname = f"Student {k + 1}" + " Longname" * (k % 3 == 0)
            joined = client.post(f"/api/sessions/{self.code}/join", json={"nickname": nickname})
            assert joined.status_code == 200, joined.text
            self.students.append(client)

    def put(self, **change) -> dict:
        r = httpx.put(f"{self.base}/api/sessions/{self.code}/state", headers=AUTH, json=change)
        assert r.status_code == 200, r.text
        return r.json()

    def answer(self, activity: str, item: str, pick) -> None:
        for k, client in enumerate(self.students):
            r = client.post(f"/api/sessions/{self.code}/answers", json={"activity": activity, "item": item, "answer": pick(k)})
            assert r.status_code == 201, r.text

    def bert(self) -> str:
        r = httpx.post(f"{self.base}/api/sessions/{self.code}/items", headers=AUTH,
                       json={"activity": "fill", "text": SENTENCE, "positions": HIDDEN})
        assert r.status_code == 201, r.text
        return r.json()["item"]

    def close(self) -> None:
        for client in self.students:
            client.close()


def projector(browser, base: str, code: str):
    """(context, page, recorder): the instructor's browser with the class on the projector."""
    context, page, rec = new_page(browser, base, *SIZES[0])
    page.goto(f"/login#token={TOKEN}")
    page.wait_for_url(re.compile(r"/teach"))
    page.goto(f"/class?code={code}&projector=1")
    page.wait_for_function("() => { const q = document.querySelector('#c-qr img.qr'); return q && q.complete; }")
    return context, page, rec


def wait_text(page, selector: str, pattern: str) -> None:
    page.wait_for_function("([s, p]) => { const n = document.querySelector(s); return n && new RegExp(p).test(n.innerText); }",
                           arg=[selector, pattern], timeout=10_000)


def settle(page) -> None:
    """Let fit.js (one animation frame after a change or a resize) and the page settle."""
    try:
        page.wait_for_function("() => document.documentElement.scrollHeight <= innerHeight && "
                               "document.documentElement.scrollWidth <= innerWidth", timeout=3000)
    except Exception:
        pass  # measured below: the overflow is reported, not waited for forever
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    page.wait_for_timeout(150)


def measure(page, stage: str, shots: Path, problems: list[str], sizes: dict[str, dict]) -> None:
    """At both sizes: the screenshot, every text's size against its floor, nothing to scroll or cut."""
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        settle(page)
        name = f"{stage}-{width}x{height}"
        page.screenshot(path=str(shots / f"{name}.png"))
        texts = page.evaluate(MEASURE, RUNNING)
        assert texts, f"{name}: no text measured"
        run = [t["px"] for t in texts if t["running"]]
        lab = [t["px"] for t in texts if not t["running"]]
        sizes[name] = {"running": (min(run), max(run)) if run else None, "label": (min(lab), max(lab)) if lab else None,
                       "fit": page.evaluate("() => getComputedStyle(document.documentElement).getPropertyValue('--fit') || '1'")}
        for t in texts:
            floor = RUNNING_PX if t["running"] else LABEL_PX
            if t["px"] < floor - 0.05:
                kind = "running text" if t["running"] else "label"
                problems.append(f"{name}: {t['what']} {t['px']:.1f} px < {floor} ({kind}): {t['text']!r}")
        over = overflow(page)
        if over != {"down": 0, "sideways": 0}:
            problems.append(f"{name}: scrolls {over}")
        cut = cut_sideways(page, "main")
        if cut:
            problems.append(f"{name}: cut on the right {cut}")
    page.set_viewport_size({"width": SIZES[0][0], "height": SIZES[0][1]})


def report(sizes: dict[str, dict]) -> str:
    return "\n".join(f"  {k}: running {v['running']}, labels {v['label']}, fit {v['fit']}" for k, v in sizes.items())


def test_every_stage_of_a_class_is_readable_from_the_back_row(browser, room, shots):
    lesson = Class(room)
    context, pr, rec = projector(browser, room, lesson.code)
    problems: list[str] = []
    sizes: dict[str, dict] = {}
    try:
        measure(pr, "lobby", shots, problems, sizes)

        lesson.put(page="nsp", item=lesson.nsp)
        wait_text(pr, "#c-item-h", "item 1 of 1")
        lesson.answer("nsp", lesson.nsp, lambda k: "IsNext" if k % 3 else "NotNext")
        wait_text(pr, "#c-results", f"^{STUDENTS} answered")
        measure(pr, "nsp-open", shots, problems, sizes)
        lesson.put(paused=True)
        pr.wait_for_selector(".c-live.is-paused")
        measure(pr, "paused", shots, problems, sizes)
        lesson.put(paused=False, locked=True)
        pr.wait_for_selector(".c-live:not(.is-paused)")
        measure(pr, "nsp-locked", shots, problems, sizes)
        lesson.put(revealed=True)
        wait_text(pr, "#c-results", "BERT says")
        measure(pr, "nsp-revealed", shots, problems, sizes)

        lesson.put(join_screen=True)
        pr.wait_for_selector("#c-qr img.qr", state="visible")
        measure(pr, "join-screen", shots, problems, sizes)
        lesson.put(join_screen=False)
        pr.wait_for_selector("#c-qr img.qr", state="hidden")

        item = lesson.bert()
        lesson.put(page="fill", item=item)
        pr.wait_for_selector("#c-item .c-bert-line")
        lesson.answer("fill", item, lambda k: "".join("beotnq"[(k + j) % 6] for j in range(len(HIDDEN))))
        wait_text(pr, "#c-results", f"^{STUDENTS} answered")
        measure(pr, "fill-open", shots, problems, sizes)
        lesson.put(revealed=True)
        pr.wait_for_function("n => document.querySelectorAll('#c-results .c-mask-box').length === n", arg=len(HIDDEN))
        measure(pr, "fill-revealed", shots, problems, sizes)

        lesson.put(page="concept", item=CONCEPT)
        pr.wait_for_selector("#c-item .c-question")
        lesson.answer("concept", CONCEPT, lambda k: str(k % 4))
        wait_text(pr, "#c-results", f"^{STUDENTS} answered")
        measure(pr, "concept-open", shots, problems, sizes)
        lesson.put(revealed=True)
        pr.wait_for_selector("#c-results .c-explain")
        measure(pr, "concept-revealed", shots, problems, sizes)

        items = lesson.put(page="label")["items"]["label"]
        pr.wait_for_function("n => document.querySelectorAll('#c-results .c-label-text').length === n", arg=len(LINES))
        for line in items:
            lesson.answer("label", line["item"], lambda k: LABELS[k % 3] if k % 4 else LABELS[0])
        measure(pr, "label-open", shots, problems, sizes)
        lesson.put(revealed=True)
        pr.wait_for_selector("#c-results .c-label-bar")
        measure(pr, "label-revealed", shots, problems, sizes)

        # the line the page shows while the server is away (classroom.js follow() calls it; taking the server
        # away is test_phone_truths.py's and test_lesson_rehearsal.py's part, here only its size counts)
        toggle = "on => import('/static/lib/classroom.js').then((m) => m.reconnecting(on))"
        pr.evaluate(toggle, True)
        pr.wait_for_selector("#c-reconnecting", state="visible")
        measure(pr, "reconnecting", shots, problems, sizes)
        for width, height in SIZES:  # it lies over the strip (the code), never over the stage
            pr.set_viewport_size({"width": width, "height": height})
            settle(pr)
            line, stage = (pr.eval_on_selector(s, "n => n.getBoundingClientRect().toJSON()")
                           for s in ("#c-reconnecting", ".c-now"))
            assert line["bottom"] <= stage["top"] + 1, f"{width}x{height}: the Reconnecting line covers the stage: {line} {stage}"
        pr.evaluate(toggle, False)

        # the leaderboard, a screen of its own; kept on, the end names the top of the class with it
        lesson.put(leaderboard=True)
        pr.wait_for_selector("#c-leaders:not([hidden]) li")
        measure(pr, "leaderboard", shots, problems, sizes)
        lesson.put(ended=True)
        pr.wait_for_selector(".c-end-top li")
        measure(pr, "end", shots, problems, sizes)
        rec.assert_clean(pr)
    finally:
        context.close()
        lesson.close()
    print("font sizes (min, max) per stage:\n" + report(sizes))
    assert not problems, (f"{len(problems)} text(s) below the floor (running text {RUNNING_PX} px, labels {LABEL_PX} px) "
                          "or a stage that does not fit:\n" + "\n".join(problems) + "\nsizes:\n" + report(sizes))


def test_the_nsp_stage_shows_both_segments_and_the_question_before_the_reveal(browser, room, shots):
    lesson = Class(room, students=1)
    context, pr, rec = projector(browser, room, lesson.code)
    try:
        lesson.put(page="nsp", item=lesson.nsp)
        wait_text(pr, "#c-item-h", "item 1 of 1")
        for width, height in SIZES:
            pr.set_viewport_size({"width": width, "height": height})
            settle(pr)
            text = pr.inner_text(".c-now")  # innerText: only what is rendered
            flat = lambda s: " ".join(s.split())  # noqa: E731
            for segment in ("a", "b"):
                assert flat(lesson.nsp_text[segment]) in flat(text), f"{width}x{height}: segment {segment.upper()} is not shown"
            assert NSP_QUESTION in text, f"{width}x{height}: the question {NSP_QUESTION!r} is not shown"
            assert not pr.is_visible("#c-results .bars") and "BERT says" not in text, "the answer shows before the reveal"
            assert overflow(pr) == {"down": 0, "sideways": 0}
        rec.assert_clean(pr)
    finally:
        context.close()
        lesson.close()
