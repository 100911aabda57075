"""/train in a real browser: the instructor logs in and starts a tiny run; a second browser context
without the token watches it arrive live, sees the snapshots, and plays with the new models."""
from __future__ import annotations

import re

import pytest


pytestmark = pytest.mark.browser
TOKEN = "browser-teacher-token"


@pytest.fixture(scope="module")
def train_server(tiny_models_dir, tmp_path_factory, app_server):
    from app.config import Settings
    from app.main import create_app

    settings = Settings(models_dir=tiny_models_dir, data_dir=tmp_path_factory.mktemp("data"), instructor_token=TOKEN,
                        run_test_presets=True)
    with app_server(create_app(settings)) as url:
        yield url


# Where things are on the teacher's screen right after Start (the viewport, without scrolling).
LAYOUT = """() => {
  const box = (sel) => { const r = document.querySelector(sel).getBoundingClientRect(); return [r.top, r.bottom, r.height]; };
  return { scrollY: window.scrollY, height: window.innerHeight, status: box('#t-status'), stats: box('#t-stats'),
           gpt: box('#t-chart-gpt svg'), bert: box('#t-chart-bert svg'), form: document.querySelector('#t-start').hidden,
           newRun: !document.querySelector('#t-new').hidden, go: document.querySelector('#t-go').disabled };
}"""


@pytest.fixture(scope="module")
def finished_run(browser, train_server, tiny_corpus, make_page):
    """The instructor's browser starts a run; the student's browser watches it to the end."""
    text = "".join(p.read_text(encoding="utf-8") for p in sorted(tiny_corpus.glob("*.txt")))
    text += "\n<b>bold?</b> [MASK] [CLS] <img src=x onerror=alert(1)>\n"
    teacher_ctx, teacher, t_rec = make_page(browser, train_server, 1280, 720)  # a projector
    teacher.goto(f"/login#token={TOKEN}")
    teacher.wait_for_url(re.compile(r"/teach"))
    assert TOKEN not in teacher.url
    teacher.goto("/train")
    teacher.wait_for_selector("#t-start:not([hidden])")
    teacher.check("input[name=t-source][value=paste]")
    teacher.fill("#t-text", text)
    teacher.fill("#t-name", "Our poems")
    teacher.check("input[name=t-preset][value=tiny]")
    teacher.click("#t-go")
    teacher.wait_for_function("() => document.querySelector('#t-run-name').textContent === 'Our poems'")
    teacher.wait_for_function("() => document.querySelector('#t-status').textContent !== 'starting'")
    run_id = teacher.evaluate("new URLSearchParams(location.search).get('run')")
    assert run_id
    projector = teacher.evaluate(LAYOUT)

    student_ctx, student, s_rec = make_page(browser, train_server)
    student.goto("/train")
    # the page learns who is looking from /api/runs after load (a run is training meanwhile): wait for
    # its answer, then a student sees the login prompt and neither the start form nor "New run…"
    student.wait_for_selector("#t-login", state="visible")
    assert student.is_hidden("#t-start") and student.is_hidden("#t-new") and student.is_visible("#t-login a[href='/login']")
    student.wait_for_function("() => /step \\d+/.test(document.querySelector('#t-stats').textContent)"
                              " || document.querySelector('#t-status').textContent === 'finished'", timeout=120_000)
    student.wait_for_function("() => document.querySelector('#t-status').textContent === 'finished'", timeout=180_000)
    student.wait_for_selector("#t-end:not([hidden])")
    yield {"id": run_id, "student": student, "s_rec": s_rec, "teacher": teacher, "t_rec": t_rec, "projector": projector,
           "text": text}
    teacher_ctx.close()
    student_ctx.close()


def test_student_watches_the_run_live_to_the_end(finished_run):
    page = finished_run["student"]
    assert page.locator("#t-chart-gpt svg path.train").count() == 1
    assert page.locator("#t-chart-gpt svg circle.val").count() >= 2
    cards = page.locator("#t-snapshots .snapshot")
    assert cards.count() >= 3 and "Final" in cards.last.inner_text()
    assert "GPT" in page.inner_text("#t-metrics") and "python -m training live" in page.inner_text("#t-commands")
    # the class's text is shown as text: no markup from it ever becomes an element
    assert page.locator("#main b, #main img").count() == 0
    assert page.request.post("/api/runs", data={}).status == 401  # with the student's cookies: cannot start one
    assert page.is_hidden("#t-cancel") and page.is_hidden("#t-delete")
    finished_run["s_rec"].assert_clean(page)
    finished_run["t_rec"].assert_clean(finished_run["teacher"])


def test_share_link_restores_the_run(browser, train_server, finished_run, make_page):
    ctx, page, rec = make_page(browser, train_server)
    page.goto(f"/train?run={finished_run['id']}")
    page.wait_for_function("() => document.querySelector('#t-status').textContent === 'finished'")
    assert page.inner_text("#t-run-name") == "Our poems"
    assert page.locator("#t-snapshots .snapshot").count() >= 3
    rec.assert_clean(page)
    ctx.close()


@pytest.mark.parametrize("path, call", [
    ("/generate", "(await import('/static/lib/api.js')).api('/api/generate', {body: {prompt: 'Line ', max_new_tokens: 5}})"),
    ("/mask-fill", "(await import('/static/lib/api.js')).api('/api/mask-fill', {body: {text: 'Line 3 speaks', positions: [1]}})"),
])
def test_the_new_models_play_in_the_applets(browser, train_server, finished_run, path, call, make_page):
    """The run and a snapshot, chosen by the link's `model`, are picked and answer in the applets."""
    run_id = finished_run["id"]
    ctx, page, rec = make_page(browser, train_server)
    for model, label in ((run_id, "Our poems · final"), (f"{run_id}@0", "Our poems · step 0")):
        page.goto(f"{path}?model={model}")
        page.wait_for_selector("#model-picker")
        assert page.eval_on_selector("#model-picker", "s => s.value") == model
        assert label in page.eval_on_selector("#model-picker", "s => s.selectedOptions[0].textContent")
        with page.expect_request(lambda r: r.method == "POST" and path.replace("/generate", "/api/generate")
                                 .replace("/mask-fill", "/api/mask-fill") in r.url) as req:
            answer = page.evaluate(f"async () => {call}")
        assert f'"model":"{model}"' in req.value.post_data.replace(" ", "")
        assert answer and ("text" in answer or "masks" in answer)
    rec.assert_clean(page)
    ctx.close()


def test_after_start_the_run_is_what_a_projector_shows(finished_run):
    """1280x720 right after Start: the form has folded away ("New run…" brings it back), Start is
    off, and the run's status and both loss curves are on screen without scrolling."""
    at = finished_run["projector"]
    assert at["form"] and at["newRun"] and at["go"]
    assert at["scrollY"] == 0
    for part in ("status", "stats", "gpt", "bert"):
        top, bottom, height = at[part]
        assert 0 <= top and bottom <= at["height"], (part, at)
    assert at["gpt"][2] > 150 and at["bert"][2] > 150  # whole charts, not slivers


def test_the_run_shows_each_models_own_steps_and_honest_numbers(finished_run):
    page = finished_run["student"]
    cards = page.locator("#t-snapshots .snapshot")
    final = cards.last.inner_text()
    steps = page.evaluate("fetch('/api/runs/' + new URLSearchParams(location.search).get('run')).then(r => r.json())")["steps"]
    assert f"GPT step {steps['gpt']}" in final and f"BERT step {steps['bert']}" in final
    assert f"GPT step {steps['gpt']} · BERT step {steps['bert']}" in page.inner_text("#t-stats")
    # snapshots side by side: one row (scrolling sideways when they do not fit)
    tops = {round(b["y"]) for b in (cards.nth(i).bounding_box() for i in range(cards.count()))}
    assert len(tops) == 1
    assert page.locator("#t-snapshots .best-mark").count() >= 1  # the lowest validation loss is marked
    # BERT: held-out top-1 beside the baseline, a visible legend, chance said for NSP
    assert page.locator("#t-held-bert svg path.train").count() == 1 and "% of hidden characters right" in page.inner_text("#t-held-now-bert")
    assert page.is_visible(".fill-legend") and "wrong" in page.inner_text(".fill-legend")
    assert "50 % = chance" in page.inner_text("#t-metrics")
    assert "tokens/s" not in page.inner_text("#t-stats") and "remaining" not in page.inner_text("#t-stats")


def test_a_runs_model_gets_its_own_text_not_shakespeare(browser, train_server, finished_run, make_page):
    """Generation's prompt, Mask-Fill's sentence and examples, and the footer come from the run's
    own held-out text when its model is chosen."""
    run_id, text = finished_run["id"], " ".join(finished_run["text"].split())
    ctx, page, rec = make_page(browser, train_server)
    examples = page.request.get(f"/api/models/{run_id}").json()["examples"]
    assert examples and examples["prompt"] in text and "To be" not in examples["prompt"]
    page.goto(f"/generate?model={run_id}")
    page.wait_for_function("(p) => document.querySelector('#g-prompt').value === p", arg=examples["prompt"])
    assert "Our poems" in page.inner_text("#footer-models") and "of its own" in page.inner_text("#footer-models")
    page.goto(f"/mask-fill?model={run_id}")
    page.wait_for_function("(s) => document.querySelector('#mf-text').value === s", arg=examples["sentence"])
    options = page.eval_on_selector_all("#mf-example option", "os => os.map(o => o.textContent)")[1:]
    assert options == examples["lines"]
    page.goto("/generate")  # the shipped set keeps its own
    page.wait_for_function("() => document.querySelector('#g-prompt').value.startsWith('To be')")
    rec.assert_clean(page)
    ctx.close()


def test_the_gap_note_explains_memorising_only_when_the_gap_is_large(finished_run):
    page = finished_run["student"]
    note = """async ([train, val]) => (await import('/static/pages/train_curves.js')).gapNote({ curves: {
        gpt: { train: [[10, train + 0.1], [20, train], [30, train - 0.1]], val: [[30, val]] }, bert: { train: [], val: [] } } })"""
    assert "memorising" in page.evaluate(note, [0.76, 1.65])
    assert page.evaluate(note, [1.6, 1.65]) == ""


def test_a_new_run_clears_the_old_one_at_once_and_a_cancelled_run_says_no_time_left(finished_run):
    """Start: the previous run's curves go at once (not ~5 s later, under the new name); a run
    stopped mid-way shows each model's steps, never "remaining"."""
    page = finished_run["teacher"]
    page.click("#t-new")
    assert page.is_visible("#t-start") and page.is_disabled("#t-go") is False
    page.fill("#t-name", "Cut short")
    page.check("input[name=t-preset][value=tiny-slow]")
    assert page.locator("#t-chart-gpt svg path.train").count() == 1
    page.click("#t-go")
    assert page.locator("#t-chart-gpt svg path.train").count() == 0 and page.inner_text("#t-run-name") == "Cut short"
    assert page.is_disabled("#t-go")
    page.wait_for_function("() => /step \\d+/.test(document.querySelector('#t-stats').textContent)", timeout=120_000)
    page.once("dialog", lambda d: d.accept())
    page.click("#t-cancel")
    page.wait_for_function("() => document.querySelector('#t-status').textContent === 'cancelled'", timeout=60_000)
    stats = page.inner_text("#t-stats")
    assert "remaining" not in stats and "Stopped (cancelled)" in stats and "GPT step" in stats
    page.wait_for_function("() => !document.querySelector('#t-go').disabled", timeout=20_000)
    finished_run["t_rec"].assert_clean(page)


def test_every_family_with_a_trainer_is_offered_and_electra_trains_from_the_page(finished_run):
    """The form's models come from the server's family specs (GET /api/families); ELECTRA, which the
    trainer can train, is one of them: ticked alone, it trains, and the run shows its own loss curve,
    its own live view (the swaps it spots) and its own held-out rows."""
    page = finished_run["teacher"]
    specs = page.evaluate("fetch('/api/families').then(r => r.json())")["families"]
    offered = page.eval_on_selector_all("#t-families input", "bs => bs.map(b => [b.value, b.checked])")
    assert offered == [[s["name"], not s["optional"]] for s in specs if s["trainable"]]
    assert "electra" in dict(offered)
    page.click("#t-new")
    for name, _ in offered:
        page.set_checked(f"#t-family-{name}", name == "electra")
    page.fill("#t-name", "Swaps")
    page.check("input[name=t-preset][value=tiny]")
    page.click("#t-go")
    page.wait_for_function("() => document.querySelector('#t-run-name').textContent === 'Swaps'")
    page.wait_for_function("() => document.querySelector('#t-status').textContent === 'finished'", timeout=180_000)
    page.wait_for_selector("#t-end:not([hidden])")
    assert page.locator("#t-chart-electra svg path.train").count() == 1
    assert page.locator("#t-chart-gpt").count() == 0 and page.locator("#t-view-bert").count() == 0
    assert "ELECTRA spots the swapped characters" in page.inner_text("#t-views")
    assert "characters" in page.inner_text("#t-view-electra")  # "right about N of M characters"
    metrics = page.inner_text("#t-metrics")
    assert "swapped characters caught" in metrics and "always answering" in metrics
    assert "ELECTRA step" in page.inner_text("#t-stats")
    finished_run["t_rec"].assert_clean(page)
