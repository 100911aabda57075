"""The fine-tune lab claims nothing its test part cannot carry, and its result fits the projector
(issue 42 musts 2 and 5), in real Chromium on the tiny models:
- the issue's reproduction: a class session with 6 labelled lines -> /finetune?class=CODE: before
  Start the page says the split (4 training, 2 test texts), that 8, 32 and 128 will be skipped and why
  (not enough labelled texts), and that 2 test texts are too few to compare two arms; after the run the
  same sentences, each arm's score and answers, and no "survives the correction" line;
- a task whose test part reaches the minimum is compared (the headline counts its comparisons);
- /finetune?projector=1 at 1280x720 and 1024x768 with either result: nothing to scroll, the headline
  and the chart inside the screen.
Screenshots (tests/browser/screenshots/finetune-evidence/): before Start and the results at 1280x720,
1280x720 and 1024x768 with ?projector=1, and 390x844."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.browser.stage import box, cut_sideways, inside, overflow

pytestmark = pytest.mark.browser
TOKEN = "evidence-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
REPO = Path(__file__).resolve().parents[2]
LINES = ["What a lovely day", "I lost my keys again", "The cake was wonderful", "It rained all week",
         "A fine walk by the sea", "The bus never came"]
PROJECTOR = [(1280, 720), (1024, 768)]
SKIPPED = "more than the 4 labelled training examples there are ('all' runs every one of them)"


def trainer_has_finetune() -> bool:
    try:
        return subprocess.run([sys.executable, "-m", "training", "finetune", "--list-tasks"], cwd=REPO,
                              capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


needs_trainer = pytest.mark.skipif(not trainer_has_finetune(), reason="python -m training finetune is not in this checkout")


@pytest.fixture(scope="module")
def lab(tiny_models_dir, tmp_path_factory, app_server):
    from app.config import Settings
    from app.jobs import training_available
    from app.main import create_app

    if not training_available():
        pytest.skip("the fine-tune lab's start form needs the train extra")
    settings = Settings(models_dir=tiny_models_dir, data_dir=tmp_path_factory.mktemp("data"), instructor_token=TOKEN,
                        run_threads=1)
    with app_server(create_app(settings)) as url:
        yield url


@pytest.fixture(scope="module")
def shots(screenshots) -> Path:
    path = screenshots / "finetune-evidence"
    path.mkdir(parents=True, exist_ok=True)
    return path


def class_of_six(base: str) -> str:
    """A Label-together session whose 3 students labelled 6 lines (3 happy, 3 sad): its code."""
    r = httpx.post(f"{base}/api/sessions", headers=AUTH, json={"nsp_count": 0, "labels": ["happy", "sad"], "lines": LINES})
    assert r.status_code == 201, r.text
    code = r.json()["code"]
    assert httpx.put(f"{base}/api/sessions/{code}/state", json={"page": "label"}, headers=AUTH).status_code == 200
    for k in range(3):
        c = httpx.Client(base_url=base)
        assert c.post(f"/api/sessions/{code}/join", json={"nickname": f"Labeller {k}"}).status_code == 200
        for n in range(len(LINES)):
            r = c.post(f"/api/sessions/{code}/answers",
                       json={"activity": "label", "item": f"l{n + 1}", "answer": "happy" if n % 2 == 0 else "sad"})
            assert r.status_code == 201, r.text
    assert httpx.get(f"{base}/api/sessions/{code}/labels.jsonl", headers=AUTH).text.count("\n") == 6
    return code


def teacher(browser, base, make_page, width=1280, height=720):
    context, page, rec = make_page(browser, base, width, height)
    page.goto(f"/login#token={TOKEN}")
    page.wait_for_url(re.compile(r"/teach"))
    return context, page, rec


def start(page) -> None:
    """Click Start and wait until the page watches the new job (it may have shown an older one)."""
    before = page.evaluate("new URLSearchParams(location.search).get('job')")
    page.evaluate("document.querySelector('#ft-status').textContent = ''")  # the older job's stream has ended
    page.click("#ft-go")
    page.wait_for_function("(b) => { const j = new URLSearchParams(location.search).get('job'); return j && j !== b; }",
                           arg=before)


def quick_starts(page) -> None:
    """Start as the page sends it, with a few training steps added (the tiny models: seconds, not minutes)."""
    def go(route):
        if route.request.method != "POST":
            return route.continue_()
        route.continue_(post_data=json.dumps({**route.request.post_data_json, "steps": 3}))
    page.route("**/api/finetunes", go)


def finished(page) -> str:
    """The watched job's id, once the page shows it finished with the trainer's summary."""
    page.wait_for_function("""() => document.querySelector('#ft-status').textContent === 'finished'
      && /^(\\d+) of \\1 fine-tunes done/.test(document.querySelector('#ft-progress').textContent)
      && document.querySelector('#ft-gap').textContent.length > 0
      && !/Results so far/.test(document.querySelector('#ft-gap').textContent)""", timeout=600_000)
    return page.evaluate("new URLSearchParams(location.search).get('job')")


def projector_fits(browser, base, make_page, job: str, shots: Path, name: str) -> None:
    for width, height in PROJECTOR:
        context, page, rec = make_page(browser, base, width, height)
        try:
            page.goto(f"/finetune?projector=1&job={job}")
            page.wait_for_function("() => document.querySelector('#ft-status').textContent === 'finished' && "
                                   "document.querySelectorAll('#ft-plot circle').length > 0")
            page.wait_for_timeout(300)
            page.screenshot(path=str(shots / f"{name}-projector-{width}x{height}.png"))
            assert overflow(page) == {"down": 0, "sideways": 0}, (width, height, overflow(page))
            for key in ("#ft-gap", "#ft-plot svg"):
                assert inside(page, key), (width, height, key, box(page, key))
            assert box(page, "#ft-plot svg")["height"] >= 0.35 * height, box(page, "#ft-plot svg")  # a chart, not a stamp
            assert not cut_sideways(page, "#ft-gap", "#ft-plot", "#ft-legend")
            rec.assert_clean(page)
        finally:
            context.close()


@needs_trainer
def test_a_six_line_class_hand_off_says_what_it_can_before_and_after_and_claims_nothing(browser, lab, make_page, shots):
    code = class_of_six(lab)
    phone_ctx, phone, phone_rec = teacher(browser, lab, make_page, 390, 844)
    context, page, rec = teacher(browser, lab, make_page)
    try:
        for p in (page, phone):
            p.goto(f"/finetune?class={code}")
            p.wait_for_function("() => /6 labelled lines/.test(document.querySelector('#ft-file-info').textContent)")
            p.wait_for_function("() => document.querySelector('#ft-plan').dataset.enough === 'false'")
        before = page.inner_text("#ft-plan")
        assert "This task: 6 labelled texts, 4 to train on and 2 held out to test. Sizes that will run: all (4)." in before
        assert f"Size 8 not run: {SKIPPED}." in before  # the hand-off's grid: sizes 8 and all (issue 42 must 3)
        assert ("The test part holds 2 texts, too few to compare two arms (that needs at least 20 test texts): no "
                "difference is claimed") in before
        page.screenshot(path=str(shots / "before-start-1280x720.png"), full_page=True)
        page.locator("#ft-start").screenshot(path=str(shots / "before-start-form-1280x720.png"))
        phone.locator("#ft-plan").scroll_into_view_if_needed()
        phone.screenshot(path=str(shots / "before-start-390x844.png"))
        assert phone.evaluate("document.scrollingElement.scrollWidth <= innerWidth + 1")
        page.fill("#ft-sizes", "2,4,all")  # the plan follows the form
        page.wait_for_function("() => /Size 2 not run: too few/.test(document.querySelector('#ft-plan').textContent)")
        assert "Size 4 not run: 'all' is these same 4 labelled examples, every one of them used." in page.inner_text("#ft-plan")
        page.fill("#ft-sizes", "8,32,128,all")
        page.wait_for_function("() => /and 128 not run/.test(document.querySelector('#ft-plan').textContent)")
        page.fill("#ft-seeds", "2")
        quick_starts(page)
        start(page)
        job = finished(page)
        gap, notes = page.inner_text("#ft-gap"), page.inner_text("#ft-notes")
        assert "survive" not in gap and "corrected" not in gap, gap
        assert "The test part holds 2 texts, too few to compare two arms" in gap and "the 2 test texts" in gap
        assert "always answering" in gap  # the one yardstick 2 texts still give
        assert page.inner_text("#ft-gap .gap-details").startswith("With ")  # the sizes' scores, below the lead
        assert "LP-FT (the pretrained model fine-tuned)" in gap and "the model from scratch" in gap
        assert f"Sizes 8, 32 and 128 not run: {SKIPPED}." in notes  # the words said before Start
        # below the minimum no range over seeds alone, and no log scale for the one size that ran (issue 52 must 3)
        table = page.inner_text("#ft-table")
        assert " – " not in table and "no range" in table, table
        assert page.locator("#ft-plot .whisker").count() == 0 and "log scale" not in page.inner_text("#ft-plot")
        detail = httpx.get(f"{lab}/api/finetunes/{job}").json()
        assert detail["final"]["evidence"]["enough"] is False and detail["final"]["headline"]["comparisons"] == []
        page.screenshot(path=str(shots / "six-lines-1280x720.png"), full_page=True)
        page.locator("#ft-job-h").scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "six-lines-1280x720-screen.png"))
        phone.goto(f"/finetune?job={job}")
        finished(phone)
        phone.locator("#ft-job-h").scroll_into_view_if_needed()
        phone.screenshot(path=str(shots / "six-lines-390x844.png"))
        phone.locator("section.panel:has(#ft-job-h)").screenshot(path=str(shots / "six-lines-job-390x844.png"))
        assert phone.evaluate("document.scrollingElement.scrollWidth <= innerWidth + 1")
        assert "survive" not in phone.inner_text("main")
        rec.assert_clean(page)
        phone_rec.assert_clean(phone)
    finally:
        context.close()
        phone_ctx.close()
    projector_fits(browser, lab, make_page, job, shots, "six-lines")


def enough_texts(folder: Path) -> Path:
    """80 lines, 24 of them marked test: above the minimum of 20 test texts."""
    rows = []
    for i in range(80):
        good = i % 2 == 0
        rows.append({"text": f"Line {i} speaks of {'the king and the crown' if good else 'a ship upon the sea'}",
                     "label": "king" if good else "sea", "split": "test" if i >= 56 else "train"})
    path = folder / "king-or-sea-80.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@needs_trainer
def test_a_test_part_above_the_minimum_is_compared_and_fits_the_projector(browser, lab, make_page, shots, tmp_path):
    context, page, rec = teacher(browser, lab, make_page)
    try:
        page.goto("/finetune")
        page.wait_for_selector("#ft-start:not([hidden])")
        page.wait_for_function("() => document.querySelector('#ft-plan').dataset.enough === 'true'")  # a shipped task
        page.select_option("#ft-task", "")
        page.set_input_files("#ft-file", str(enough_texts(tmp_path)))
        page.wait_for_function("() => /holds 24 texts/.test(document.querySelector('#ft-plan').textContent)")
        assert "enough to compare two arms" in page.inner_text("#ft-plan")
        page.fill("#ft-sizes", "8,all")
        page.fill("#ft-seeds", "2")
        quick_starts(page)
        start(page)
        job = finished(page)
        gap = page.inner_text("#ft-gap")
        assert re.search(r"\d+ comparisons: the fine-tuned model \(LP-FT\) against", gap), gap
        assert "too few" not in gap
        page.screenshot(path=str(shots / "enough-1280x720.png"), full_page=True)
        rec.assert_clean(page)
    finally:
        context.close()
    projector_fits(browser, lab, make_page, job, shots, "enough")
