"""/finetune in a real browser: the lesson at phone width and in projector mode; the instructor
starts a fine-tune from the page with an uploaded task file (the real trainer on the tiny models);
a student's browser watches it fill the plot and the table, whose numbers are the API's, and asks
the exported classifiers in "Try it"."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest


pytestmark = pytest.mark.browser
TOKEN = "browser-teacher-token"
REPO = Path(__file__).resolve().parents[2]


def trainer_has_finetune() -> bool:
    try:
        return subprocess.run([sys.executable, "-m", "training", "finetune", "--list-tasks"], cwd=REPO,
                              capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@pytest.fixture(scope="module")
def ft_server(tiny_models_dir, tmp_path_factory, app_server):
    from app.config import Settings
    from app.main import create_app

    settings = Settings(models_dir=tiny_models_dir, data_dir=tmp_path_factory.mktemp("data"), instructor_token=TOKEN,
                        run_threads=1)
    with app_server(create_app(settings)) as url:
        yield url


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def no_horizontal_scroll(page) -> bool:
    return page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth + 1")


def test_the_lesson_reads_on_a_phone_and_on_a_projector(browser, ft_server, make_page):
    ctx, page, rec = make_page(browser, ft_server, 390, 844)
    page.goto("/finetune")
    page.wait_for_selector("#ft-plot svg")
    # the answer first, short enough to stay open on a phone (issue 52 must 3), its chart drawn from its table
    assert page.inner_text("#ft-lead").startswith("Pretraining beats counting letter patterns.")  # the primary answer
    assert len(page.inner_text("#ft-lead").split()) < 80 and page.locator(".intro-fold").count() == 0
    assert page.locator("#ft-answer-plot svg circle").count() == 9 and page.is_visible("#ft-answer-plot svg")
    assert page.is_hidden("#ft-evidence p")  # the statistics one click away
    page.click("#ft-evidence > summary")
    assert "before any label" in page.inner_text("#ft-evidence")
    text = page.inner_text("main")
    for term in ("Self-supervision", "CLS head", "Per-character head", "Readout", "Linear probe", "LP-FT", "From scratch",
                 "Class weights", "One planned question", "Held-out accuracy", "95 % interval",
                 "in-context learning"):
        assert term in text or term in page.content(), term
    assert page.is_visible("#ft-login") and page.is_hidden("#ft-start")  # students watch, the instructor starts
    assert page.is_visible("main a[href='/concepts']")  # (the navigation's is behind the phone's menu)
    assert no_horizontal_scroll(page)
    rec.assert_clean(page)
    ctx.close()
    ctx, page, rec = make_page(browser, ft_server, 1280, 720)
    page.goto("/finetune?projector=1")
    page.wait_for_selector("#ft-answer-plot svg circle")
    assert page.evaluate("document.documentElement.classList.contains('projector')")
    assert page.is_hidden("#ft-lesson")  # the projector shows the plot, not the glossary
    # no fine-tune yet: the projector shows the lab's answer in its own words, not an empty job panel
    assert page.inner_text("#ft-lead").startswith("Pretraining beats counting letter patterns.")
    assert page.is_visible("#ft-lead") and page.is_visible("#ft-sure") and page.is_hidden("#ft-job")
    tick = page.evaluate("document.querySelector('#ft-answer-plot svg .tick').getBoundingClientRect().height")
    assert tick >= 16, tick  # the chart's numbers read from the back row (12 px on a laptop)
    page.keyboard.press("Tab")  # keyboard reaches the page's controls
    assert page.evaluate("document.activeElement !== document.body")
    rec.assert_clean(page)
    ctx.close()


def test_home_and_train_link_here(browser, ft_server, make_page):
    ctx, page, rec = make_page(browser, ft_server)
    for path in ("/", "/train"):
        page.goto(path)
        assert page.locator("main a[href='/finetune']").count() >= 1, path
    ctx.close()


def test_the_hand_off_names_a_single_label_and_estimates_the_time_before_start(browser, ft_server, tmp_path, make_page):
    """Issue 32: labels with one class only are named before Start (Start waits), and a time estimate shows."""
    ctx, page, rec = make_page(browser, ft_server, 390, 844)
    page.goto(f"/login#token={TOKEN}")
    page.wait_for_url(re.compile(r"/teach"))
    page.goto("/finetune")
    page.wait_for_selector("#ft-start:not([hidden])")
    page.wait_for_function("() => /minute/.test(document.querySelector('#ft-estimate').textContent)",
                           timeout=120_000)  # a shipped task: the server's plan says the time (the step timed here)
    page.select_option("#ft-task", "")
    one = tmp_path / "one.jsonl"
    one.write_text("".join(json.dumps({"text": f"what a day {i}", "label": "positive"}) + "\n" for i in range(12)))
    page.set_input_files("#ft-file", str(one))
    page.wait_for_function("() => document.querySelector('#ft-go').disabled")
    assert "Only one label so far" in page.inner_text("#ft-file-info") and "“positive”" in page.inner_text("#ft-estimate")
    page.set_input_files("#ft-file", str(task_file(tmp_path)))
    page.wait_for_function("() => !document.querySelector('#ft-go').disabled")
    assert "“king” 20 lines, “sea” 20 lines" in page.inner_text("#ft-file-info")
    page.wait_for_function("() => /^(About (a minute|\\d+ minutes)|Under a minute) on this machine/"
                           ".test(document.querySelector('#ft-estimate').textContent)")
    assert no_horizontal_scroll(page)
    rec.assert_clean(page)
    ctx.close()


def task_file(folder: Path) -> Path:
    rows = []
    for i in range(40):
        good = i % 2 == 0
        rows.append({"text": f"Line {i} speaks of {'the king and the crown' if good else 'a ship upon the sea'}",
                     "label": "king" if good else "sea", **({"split": "test"} if i >= 30 else {})})
    path = folder / "king-or-sea.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def percents(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"(-?[0-9]+\.[0-9]) %", text)]


@pytest.mark.skipif(not trainer_has_finetune(), reason="python -m training finetune is not in this checkout yet")
def test_instructor_starts_students_watch_and_the_numbers_are_the_apis(browser, ft_server, tmp_path, make_page):
    teacher_ctx, teacher, t_rec = make_page(browser, ft_server)
    teacher.goto(f"/login#token={TOKEN}")
    teacher.wait_for_url(re.compile(r"/teach"))
    teacher.goto("/finetune")
    teacher.wait_for_selector("#ft-start:not([hidden])")
    teacher.select_option("#ft-task", "")
    teacher.set_input_files("#ft-file", str(task_file(tmp_path)))
    teacher.fill("#ft-sizes", "4,all")
    teacher.fill("#ft-seeds", "2")
    teacher.click("#ft-go")
    teacher.wait_for_function("() => /job=f-/.test(location.search)")
    job_id = teacher.evaluate("new URLSearchParams(location.search).get('job')")

    student_ctx, student, s_rec = make_page(browser, ft_server, 390, 844)
    student.goto("/finetune")
    student.wait_for_function("() => document.querySelector('#ft-status').textContent === 'finished'", timeout=600_000)
    job = get(f"{ft_server}/api/finetunes/{job_id}")
    assert job["status"] == "finished"
    # the table's numbers are the API's summary, arm by arm and size by size; below the evidence minimum
    # (a job's few test texts, the plan's evidence) a range over seeds is not shown (issue 52 must 3)
    evidence = (job.get("settings") or {}).get("plan", {}).get("evidence") or {}
    few = evidence.get("enough") is False
    assert student.locator("[data-enough]").first.get_attribute("data-enough") == ("false" if few else "true")
    for arm, sizes in job["summary"].items():
        for size, cell in sizes.items():
            shown = percents(student.inner_text(f"#ft-table tr[data-arm={arm}] td[data-size='{size}']"))
            want = [100 * cell["mean"]] + ([100 * cell["lo"], 100 * cell["hi"]] if cell["lo"] is not None and not few else [])
            assert shown == pytest.approx(want, abs=0.051), (arm, size, shown, want)
    assert student.locator("#ft-plot circle").count() == sum(len(s) for s in job["summary"].values())
    gap = student.inner_text("#ft-gap")
    assert "LP-FT" in gap and "scratch" in gap  # the file declares no readout (issue 42): the arms' own words
    # Try it: every served classifier answers, with the API's probabilities
    student.fill("#ft-text", "Line 5 speaks of the sea")
    student.click("#ft-classify")
    served = [c for c in job["classifiers"] if c.get("model")]
    student.wait_for_function(f"() => document.querySelectorAll('#ft-answers .answer').length === {len(served)}")
    for c in served:
        req = urllib.request.Request(f"{ft_server}/api/classify", method="POST", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"model": c["model"], "text": "Line 5 speaks of the sea"}).encode())
        with urllib.request.urlopen(req, timeout=30) as r:
            out = json.loads(r.read())
        card = student.inner_text(f"#ft-answers .answer[data-arm={c['arm']}]")
        assert out["prediction"] in card
        assert percents(card)[-len(out["labels"]):] == pytest.approx([100 * p for p in out["probabilities"]], abs=0.051)
    assert no_horizontal_scroll(student)
    s_rec.assert_clean(student)
    t_rec.assert_clean(teacher)
    teacher_ctx.close()
    student_ctx.close()


CLASS_LABELS = "".join(json.dumps({"text": f"Line {i} speaks of {'the king and the crown' if i % 2 else 'a ship upon the sea'}",
                                   "label": "king" if i % 2 else "sea"}) + "\n" for i in range(6))


def open_hand_off(page, code: str = "RDT42") -> None:
    """/finetune?class=CODE as the class page's "Fine-tune on the pooled labels" opens it; the session's
    labels.jsonl is answered here (6 pooled lines, two labels), so no class has to be played first."""
    page.route(f"**/api/sessions/{code}/labels.jsonl",
               lambda route: route.fulfill(status=200, body=CLASS_LABELS, content_type="application/x-ndjson"))
    page.goto(f"/login#token={TOKEN}")
    page.wait_for_url(re.compile(r"/teach"))
    page.goto(f"/finetune?class={code}")
    page.wait_for_selector("#ft-readout-box:not([hidden])")


def readout_options(page) -> list[tuple[str, str]]:
    return page.evaluate("[...document.querySelectorAll('input[name=ft-readout]')].map((i) => "
                         "[i.value, i.parentElement.textContent.trim()])")


@pytest.mark.skipif(not trainer_has_finetune(), reason="python -m training finetune is not in this checkout yet")
def test_the_hand_off_offers_the_readouts_that_fit_the_class_labels(browser, ft_server, tmp_path, make_page, screenshots):
    """Issue 42 must 1: the class's pooled labels (whole texts, two labels) are offered GPT's likelihood either
    way round, "none" first and chosen; a per-character file gets BERT's reads; the choice goes to the API as
    `readout` and reaches the trainer."""
    ctx, page, rec = make_page(browser, ft_server, 390, 844)
    open_hand_off(page)
    options = readout_options(page)
    assert [v for v, _ in options] == ["", '{"gpt":"sea"}', '{"gpt":"king"}'] or \
        [v for v, _ in options] == ["", '{"gpt":"king"}', '{"gpt":"sea"}']
    assert options[0][1].startswith("None") and page.is_checked("input[name=ft-readout][value='']")
    assert all("GPT's likelihood" in t and ("“king”" in t or "“sea”" in t) for _, t in options[1:])
    hint = page.inner_text("#ft-readout-hint")
    assert "no labels taught" in hint and "already knew" in hint  # what a readout is, said where it is offered
    page.locator("#ft-readout-box").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "finetune-handoff-readout-390.png"), full_page=False)
    assert no_horizontal_scroll(page)
    rec.assert_clean(page)
    ctx.close()

    ctx, page, rec = make_page(browser, ft_server, 1280, 720)
    open_hand_off(page)
    page.locator("#ft-readout-box").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "finetune-handoff-readout-1280.png"), full_page=False)
    # a per-character file: BERT's reads; a file that declares its own: that first, "none" beside it
    chars = tmp_path / "words.jsonl"
    rows = [{"text": "the king", "tags": "00010000"}, {"text": "a ship", "tags": "100000"}] * 3
    chars.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    page.set_input_files("#ft-file", str(chars))
    page.wait_for_function("() => document.querySelectorAll('input[name=ft-readout]').length === 5")
    values = [json.loads(v) if v else v for v, _ in readout_options(page)]
    assert values == ["", {"insert": " "}, {"insert": ",.;:!?"}, {"masked": "other", "positions": "letters"}, {"masked": "upper"}]
    assert all("Tag “1”" in t for _, t in readout_options(page)[1:])
    page.locator("#ft-readout-box").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "finetune-handoff-readout-chars-1280.png"), full_page=False)
    own = tmp_path / "words-declared.jsonl"
    own.write_text(json.dumps({"readout": {"insert": " "}}) + "\n" + chars.read_text(), encoding="utf-8")
    page.set_input_files("#ft-file", str(own))
    page.wait_for_function("() => document.querySelectorAll('input[name=ft-readout]').length === 6")
    first, second = readout_options(page)[:2]
    assert first[0] == "" and first[1].startswith("As the file declares") and second == ["none", "None: no readout"]
    page.goto("/finetune?class=RDT42")  # back to the class's labels
    page.wait_for_selector("#ft-readout-box:not([hidden])")
    # choose GPT's likelihood ("king" = likelier) and start the readout alone: the body carries it, the job has it
    assert not page.is_checked("input[name=ft-arm][value=readout]")  # "None" chosen: the readout arm waits for one
    page.check("input[name=ft-readout][value='{\"gpt\":\"king\"}']")
    assert page.is_checked("input[name=ft-arm][value=readout]")  # a readout chosen: its arm follows
    for arm in ("full", "probe", "scratch", "ngram"):
        page.uncheck(f"input[name=ft-arm][value={arm}]")
    page.fill("#ft-sizes", "all")
    page.fill("#ft-seeds", "1")
    shown = page.evaluate("new URLSearchParams(location.search).get('job')")  # an earlier job the page shows
    with page.expect_response(lambda r: r.url.endswith("/api/finetunes") and r.request.method == "POST") as sent:
        page.click("#ft-go")
    body = json.loads(sent.value.request.post_data)
    assert body["readout"] == {"gpt": "king"} and body["task_name"] == "class RDT42 labels"
    assert sent.value.status == 202, sent.value.text()
    job_id = sent.value.json()["id"]
    assert job_id != shown
    page.wait_for_function(f"() => new URLSearchParams(location.search).get('job') === {json.dumps(job_id)}")
    deadline = time.monotonic() + 300
    while (job := get(f"{ft_server}/api/finetunes/{job_id}"))["status"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert job["status"] == "finished", job.get("reason")
    assert job["settings"]["readout"] == {"gpt": "king"} and "'king'" in job["start"]["readout"]
    assert "readout" in job["summary"]
    rec.assert_clean(page)
    req = urllib.request.Request(f"{ft_server}/api/finetunes/{job_id}", method="DELETE",
                                 headers={"Authorization": f"Bearer {TOKEN}"})
    urllib.request.urlopen(req, timeout=30).close()
    ctx.close()
