"""The NSP Quiz page in a real browser: answering keeps the segments and marks the choice, plays
are named by title, BERT's score on the bank is the card's, class-set links fix the questions and
their order, errors appear next to their control in plain words (also on a phone), and touch
targets are at least 44 px on a phone. Runs against the tiny models (conftest's live_server) and,
for the figures a class sees, the shipped models in models/."""
from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

SHIPPED = Path(__file__).resolve().parents[2] / "models"
READY = "#n-seq .segment.seg-b"
PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True, "device_scale_factor": 2}


pytestmark = pytest.mark.browser


def api(base: str, path: str, body: dict | None = None) -> dict:
    with httpx.Client(base_url=base, timeout=30) as client:
        r = client.post(path, json=body) if body is not None else client.get(path)
    r.raise_for_status()
    return r.json()


@pytest.fixture(scope="module")
def shipped_server(app_server):
    """The app on the shipped models (what a class sees), on a free loopback port."""
    if not (SHIPPED / "bert.onnx").exists():
        pytest.skip("models/bert.onnx not built")
    from app.config import Settings
    from app.main import create_app

    with app_server(create_app(Settings(models_dir=SHIPPED))) as url:
        yield url


@pytest.fixture
def open_nsp(browser):
    """open_nsp(base, path, phone=False) -> (page, errors): a fresh browser context per call."""
    contexts = []

    def factory(base: str, path: str = "/nsp", phone: bool = False):
        options = PHONE if phone else {"viewport": {"width": 1280, "height": 900}}
        context = browser.new_context(base_url=base, service_workers="block", **options)
        contexts.append(context)
        page = context.new_page()
        errors = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        assert page.goto(path).ok
        page.wait_for_selector(READY)
        return page, errors

    yield factory
    for context in contexts:
        context.close()


def query(page) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def in_viewport(page, selector: str) -> bool:
    box = page.eval_on_selector(selector, "e => { const r = e.getBoundingClientRect(); return [r.top, r.bottom]; }")
    return box[0] >= 0 and box[1] <= page.viewport_size["height"]


# ------------------------------------------------------------------ answering, names, BERT's score
def test_answer_keeps_segments_marks_choice_and_names_plays(shipped_server, open_nsp):
    page, errors = open_nsp(shipped_server, "/nsp?q=4")
    item = api(shipped_server, "/api/nsp/quiz?index=4")
    assert page.eval_on_selector("#n-seq .seg-a .seg-text", "e => e.textContent") == item["a"]
    page.click("#n-notnext")
    page.wait_for_selector("#n-result .p-is-next")
    truth = api(shipped_server, f"/api/nsp/quiz/{item['id']}/answer", {"guess": "NotNext"})
    # the segments are still there, unchanged, and still on screen; the choice is marked
    assert page.eval_on_selector("#n-seq .seg-a .seg-text", "e => e.textContent") == item["a"]
    assert page.eval_on_selector("#n-seq .seg-b .seg-text", "e => e.textContent") == item["b"]
    assert in_viewport(page, "#n-seq .seg-b")
    assert page.get_attribute("#n-notnext", "aria-pressed") == "true"
    assert page.get_attribute("#n-isnext", "aria-pressed") == "false"
    assert "your answer" in page.inner_text("#n-notnext") and "your answer" not in page.inner_text("#n-isnext")
    # plays by title, never the file name
    titles = api(shipped_server, "/api/models")["cards"]["bert"]["quiz"]["titles"]
    result = page.inner_text("#n-result")
    assert f"A is from {titles[truth['source_a']]}, B is from {titles[truth['source_b']]}" in result
    assert "_" not in result, "no file names such as twelfth_night"
    assert "from " + titles[truth["source_a"]] in page.eval_on_selector("#n-seq .seg-a .seg-label", "e => e.textContent")
    assert page.eval_on_selector("#n-result .p-is-next", "e => Number(e.dataset.prob)") == pytest.approx(truth["p_is_next"], abs=1e-12)
    # the buttons now say they are done (aria-disabled), and a second answer by key changes nothing
    assert page.get_attribute("#n-isnext", "aria-disabled") == "true"
    page.keyboard.press("i")
    assert page.get_attribute("#n-isnext", "aria-pressed") == "false"
    assert page.inner_text("#n-score-you") in ("0 / 1", "1 / 1")
    assert not errors


def test_page_states_berts_score_on_this_bank_from_the_card(shipped_server, open_nsp):
    page, errors = open_nsp(shipped_server)
    quiz = api(shipped_server, "/api/models")["cards"]["bert"]["quiz"]
    page.wait_for_selector("#n-model-accuracy")
    text = page.inner_text("#n-model-score")
    assert f"{quiz['correct']} / {quiz['items']}" in text and f"{quiz['accuracy'] * 100:.1f} %" in text
    assert f"IsNext {quiz['is_next_said']} times" in text
    assert "held-out pairs cut the way training cuts them" in text, "the balanced-pairs figure is labelled as such"
    assert "on the test plays" in text and "mid-line" not in text, "it names the split it was measured on"
    assert not errors


# ------------------------------------------------------------------ class sets
def test_class_set_link_fixes_questions_and_order(live_server, open_nsp):
    page, errors = open_nsp(live_server)
    page.fill("#n-set-count", "3")
    page.click("#n-set-make")
    page.wait_for_function("() => new URLSearchParams(location.search).get('set')")
    ids = query(page)["set"].split(",")
    assert len(ids) == 3 == len(set(ids)) and all(re.fullmatch(r"q\d{3}", i) for i in ids)
    link = page.input_value("#n-set-link")
    assert link == f"{live_server}/nsp?set={','.join(ids)}" and page.is_visible("#n-set-copy")
    page.click("#n-set-copy")
    page.wait_for_function("() => document.querySelector('#n-set-copied').textContent.length > 0")

    # a student opens the link: same questions, same order, scores "you x / n, BERT y / n"
    student, student_errors = open_nsp(live_server, urlparse(link).path + "?" + urlparse(link).query)
    you = bert = 0
    for k, qid in enumerate(ids):
        student.wait_for_function(f"() => document.querySelector('#n-qid').textContent.includes('{qid}')")
        assert student.inner_text("#n-qid").startswith(f"{k + 1} of 3")
        item = api(live_server, f"/api/nsp/quiz?index={int(qid[1:])}")
        assert item["id"] == qid
        student.wait_for_function(f"() => document.querySelector('#n-seq .seg-b .seg-text').textContent === {json.dumps(item['b'])}")
        student.click("#n-isnext")
        student.wait_for_selector("#n-result .p-is-next")
        truth = api(live_server, f"/api/nsp/quiz/{qid}/answer", {"guess": "IsNext"})
        you += truth["correct"]
        bert += truth["model_correct"]
        if k < 2:
            student.click("#n-next")
    assert student.inner_text("#n-set-note") == f"Class set finished: you {you} / 3, BERT {bert} / 3."
    assert student.inner_text("#n-score-you") == f"{you} / 3" and student.inner_text("#n-score-model") == f"{bert} / 3"
    # going round again shows the earlier answers without counting them twice
    student.click("#n-next")
    student.wait_for_function(f"() => document.querySelector('#n-qid').textContent.startsWith('1 of 3')")
    student.wait_for_selector("#n-result .your-guess")
    assert student.get_attribute("#n-isnext", "aria-pressed") == "true"
    assert student.inner_text("#n-score-you") == f"{you} / 3"
    assert not errors and not student_errors


def test_broken_class_set_link_says_so_next_to_the_question(live_server, browser):
    context = browser.new_context(base_url=live_server, viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto("/nsp?set=q000,q999")
        page.wait_for_selector("#n-seq .seg-b")
        page.click("#n-next")
        page.wait_for_selector("#n-seq-error")
        text = page.inner_text("#n-seq-error")
        assert "q999" in text and "not in this server's quiz" in text and "HTTP" not in text
        assert page.inner_text("#error-box") == ""
    finally:
        context.close()


# ------------------------------------------------------------------ phones: errors and touch targets
def test_errors_next_to_their_control_in_plain_words_on_a_phone(live_server, open_nsp):
    page, errors = open_nsp(live_server, phone=True)
    page.fill("#n-a", "")
    page.evaluate("window.scrollTo(0, 0)")
    page.evaluate("document.querySelector('#n-predict').click()")  # without scrolling to it first
    page.wait_for_selector("#n-a-error")
    assert page.inner_text("#n-a-error") == "Segment A is empty. Type the first segment."
    assert page.eval_on_selector("#n-a-error", "e => e.previousElementSibling.id") == "n-a"
    assert page.get_attribute("#n-a", "aria-invalid") == "true"
    assert in_viewport(page, "#n-a-error"), "the error is scrolled into view"
    assert page.inner_text("#error-box") == ""

    page.fill("#n-a", "x" * 30)
    assert page.query_selector("#n-a-error") is None, "typing clears the error"
    page.fill("#n-b", "y" * 40)  # the tiny BERT reads 64 tokens: 61 characters of A + B
    page.evaluate("window.scrollTo(0, 0)")
    page.evaluate("document.querySelector('#n-predict').click()")
    page.wait_for_selector("#n-b-error")
    assert page.inner_text("#n-b-error").startswith("A and B together are 70 characters; BERT reads at most 61")
    assert "Shorten them by 9" in page.inner_text("#n-b-error") and in_viewport(page, "#n-b-error")

    page.fill("#n-set-count", "0")
    page.click("#n-set-make")
    page.wait_for_selector("#n-set-count-error")
    assert page.inner_text("#n-set-count-error") == "Choose a whole number of questions from 1 to 20."
    assert not errors


def test_touch_targets_are_44px_on_a_phone(live_server, open_nsp):
    page, errors = open_nsp(live_server, "/nsp?q=1", phone=True)
    page.click("#n-isnext")
    page.wait_for_selector("#n-result .p-is-next")
    page.fill("#n-set-count", "2")
    page.click("#n-set-make")
    page.wait_for_selector("#n-set-link", state="visible")
    # a glossary word (button.term) is a word inside a sentence: WCAG 2.5.8 exempts inline targets
    small = page.eval_on_selector_all("main button:not(.term), main input, main textarea, main select", """els => els
        .filter(e => e.offsetParent !== null)
        .map(e => { const r = e.getBoundingClientRect(); return [e.id || e.outerHTML.slice(0, 60), r.width, r.height]; })
        .filter(([, w, h]) => w < 44 || h < 44)""")
    assert not small, f"touch targets under 44 px: {small}"
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, "nothing forces sideways scrolling"
    assert not errors
