"""Issue 43 must 4: the end of the lesson is worth showing. When the teacher ends the session the
projector shows the class's final score against BERT (the NSP questions revealed) and, only while
the leaderboard is on (issue 51 must 2: names stay private), the top of the class, from the session's
own answers."""
from __future__ import annotations

import re

import httpx
import pytest

pytestmark = pytest.mark.browser
TOKEN = "end-screen-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def end_server(class_app, tmp_path_factory):
    with class_app(TOKEN, tmp_path_factory.mktemp("data")) as url:
        yield url


def test_the_projector_ends_with_the_score_against_bert_and_the_top_of_the_class_only_with_the_leaderboard(
        browser, end_server, make_page, screenshots):
    base = end_server
    code = httpx.post(f"{base}/api/sessions", json={"nsp_count": 2}, headers=AUTH).json()["code"]
    state = httpx.put(f"{base}/api/sessions/{code}/state", json={"page": "nsp"}, headers=AUTH).json()
    items = [it["item"] for it in httpx.get(f"{base}/api/sessions/{code}", headers=AUTH).json()["items"]["nsp"]]
    students = {name: httpx.Client(base_url=base) for name in ("Ana", "Ben", "Cy")}
    for name, s in students.items():
        assert s.post(f"/api/sessions/{code}/join", json={"nickname": name}).status_code == 200
    truths = {}
    for item in items:
        httpx.put(f"{base}/api/sessions/{code}/state", json={"page": "nsp", "item": item}, headers=AUTH)
        guesses = {"Ana": "IsNext", "Ben": "NotNext", "Cy": "IsNext"}
        for name, s in students.items():
            assert s.post(f"/api/sessions/{code}/answers", json={"activity": "nsp", "item": item,
                                                                 "answer": guesses[name]}).status_code == 201
        revealed = httpx.put(f"{base}/api/sessions/{code}/state", json={"revealed": True}, headers=AUTH).json()
        truths[item] = revealed["current"]["truth"]
    results = httpx.get(f"{base}/api/sessions/{code}/results", headers=AUTH).json()["summary"]["nsp"]
    board = lambda on: httpx.put(f"{base}/api/sessions/{code}/state", json={"leaderboard": on}, headers=AUTH)  # noqa: E731
    board(True)
    board(False)  # on, then off before the end: the end screen names nobody
    httpx.put(f"{base}/api/sessions/{code}/state", json={"ended": True}, headers=AUTH)
    context, page, rec = make_page(browser, base, 1280, 720)
    try:
        page.goto(f"/login#token={TOKEN}")
        page.wait_for_url(re.compile(r"/teach"))
        page.goto(f"/class?code={code}&projector=1")
        page.wait_for_selector(".c-end-score")
        text = page.inner_text("#c-item")
        assert f"the class {round(results['class_accuracy'] * 100)}\u00a0% right, BERT {round(results['bert_accuracy'] * 100)}\u00a0% right" in text
        assert page.locator(".c-end-top").count() == 0 and "Top of the class" not in page.inner_text("body")
        assert not any(name in page.inner_text("body") for name in students)
        page.screenshot(path=str(screenshots / "class-end-projector-private-1280.png"))
        # the teacher turns the leaderboard on: now the end screen names the top of the class
        board(True)
        page.wait_for_selector(".c-end-top li")
        scores = {name: sum((g == truths[it]) for it in items)
                  for name, g in {"Ana": "IsNext", "Ben": "NotNext", "Cy": "IsNext"}.items()}
        best = max(scores.values())
        shown = page.eval_on_selector_all(".c-end-top li", "ls => ls.map((l) => l.textContent)")
        assert shown and shown[0].endswith(f": {best}") and len(shown) == sum(v > 0 for v in scores.values())
        assert page.inner_text(".c-end-score") and page.is_hidden("#c-leaders")  # the end screen, not the board over it
        page.screenshot(path=str(screenshots / "class-end-projector-1280.png"))
        board(False)
        page.wait_for_selector(".c-end-top", state="detached")
        assert not any(name in page.inner_text("body") for name in students)
        rec.assert_clean(page)
    finally:
        context.close()
        for s in students.values():
            s.close()
