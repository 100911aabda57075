"""/train in a real browser: the instructor logs in and starts a tiny run; a second browser context
without the token watches it arrive live, sees the snapshots, and plays with the new models."""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("playwright.sync_api")
# the suite's page wrapper (console errors, CSP violations, foreign requests), for our own server
_spec = importlib.util.spec_from_file_location("browser_suite", Path(__file__).with_name("conftest.py"))
_suite = sys.modules.setdefault("browser_suite", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(_suite)
make_page = _suite.make_page

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


@pytest.fixture(scope="module")
def finished_run(browser, train_server, tiny_corpus):
    """The instructor's browser starts a run; the student's browser watches it to the end."""
    text = "".join(p.read_text(encoding="utf-8") for p in sorted(tiny_corpus.glob("*.txt")))
    text += "\n<b>bold?</b> [MASK] [CLS] <img src=x onerror=alert(1)>\n"
    teacher_ctx, teacher, t_rec = make_page(browser, train_server)
    teacher.goto(f"/login#token={TOKEN}")
    teacher.wait_for_url(re.compile(r"/train"))
    assert TOKEN not in teacher.url
    teacher.wait_for_selector("#t-start:not([hidden])")
    teacher.check("input[name=t-source][value=paste]")
    teacher.fill("#t-text", text)
    teacher.fill("#t-name", "Our poems")
    teacher.check("input[name=t-preset][value=tiny]")
    teacher.click("#t-go")
    teacher.wait_for_function("() => document.querySelector('#t-run-name').textContent === 'Our poems'")
    run_id = teacher.evaluate("new URLSearchParams(location.search).get('run')")
    assert run_id

    student_ctx, student, s_rec = make_page(browser, train_server)
    student.goto("/train")
    assert student.is_hidden("#t-start") and student.is_visible("#t-login")
    student.wait_for_function("() => /step \\d+/.test(document.querySelector('#t-stats').textContent)"
                              " || document.querySelector('#t-status').textContent === 'finished'", timeout=120_000)
    student.wait_for_function("() => document.querySelector('#t-status').textContent === 'finished'", timeout=180_000)
    student.wait_for_selector("#t-end:not([hidden])")
    yield {"id": run_id, "student": student, "s_rec": s_rec, "teacher": teacher, "t_rec": t_rec}
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


def test_share_link_restores_the_run(browser, train_server, finished_run):
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
def test_the_new_models_play_in_the_applets(browser, train_server, finished_run, path, call):
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
