"""A class session in real browsers: the teacher starts a class on /class, three students (one on
a 390 px phone) open the address in the QR code, join, and follow the teacher through an NSP item
and its reveal; a reload lands where the class is; the QR code holds the reachable address."""
from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from app.config import Settings
from app.main import create_app
from tests.conftest import SHIPPED_MODELS

pytestmark = pytest.mark.browser
TOKEN = "class-browser-teacher-token"
FOLLOW_S = 2.0  # students' screens follow the teacher within this


@pytest.fixture(scope="module")
def class_server(class_app, tmp_path_factory):
    with class_app(TOKEN, tmp_path_factory.mktemp("data")) as url:
        yield url


def teacher_at(page, code: str, token: str = TOKEN) -> None:
    """The teacher's page of session `code`, logged in with the instructor token."""
    page.goto(f"/login#token={token}")
    page.wait_for_url(re.compile(r"/teach"))
    page.goto(f"/class?code={code}")


def followed(page, selector: str, pattern: str) -> float:
    """Seconds until `selector`'s text matches `pattern` (fails after FOLLOW_S)."""
    t0 = time.monotonic()
    page.wait_for_function("([s, p]) => { const n = document.querySelector(s); return n && new RegExp(p).test(n.textContent); }",
                           arg=[selector, pattern], timeout=FOLLOW_S * 1000)
    return time.monotonic() - t0


def test_three_students_follow_the_teacher_through_an_nsp_item_and_its_reveal(browser, class_server, screenshots,
                                                                              make_page):
    contexts = []

    def new(width, height):
        context, page, rec = make_page(browser, class_server, width, height)
        contexts.append(context)
        return page, rec

    try:
        teacher, trec = new(1280, 720)
        teacher.goto(f"/login#token={TOKEN}")
        teacher.wait_for_url(re.compile(r"/teach"))
        teacher.goto("/class")
        teacher.click("#c-create")
        teacher.wait_for_function("() => document.querySelector('#c-code').textContent.length === 7")
        code = teacher.evaluate("new URLSearchParams(location.search).get('code')")
        link = teacher.get_attribute("#c-qr", "data-link")
        assert link.startswith(f"{class_server}/join?code={code}&key=") and "projector" not in link  # the join key
        qr = teacher.get_attribute("#c-qr img.qr", "src")  # the server's image of the link (GET /api/qr.svg)
        assert urlparse(qr).path == "/api/qr.svg" and parse_qs(urlparse(qr).query)["text"] == [link]

        students = []
        for k, (w, h) in enumerate(((1280, 800), (1024, 768), (390, 844))):
            page, rec = new(w, h)
            page.goto(link)  # what the QR code opens
            page.fill("#j-name", f"Student {k + 1}")
            page.click("#j-go")
            page.wait_for_selector("#j-class:not([hidden])")
            assert page.text_content("#j-me") == f"Student {k + 1}"
            students.append((page, rec))
        teacher.wait_for_function("() => document.querySelector('#c-joined').textContent === '3'")
        assert teacher.locator("#c-people li").count() == 3

        # follow me: the teacher opens the NSP class set, every student's screen follows
        teacher.click("#c-pages button[data-page='nsp']")
        for page, _ in students:
            followed(page, "#j-title", "NSP class set · item 1 of 10")
            assert page.locator("#j-item .c-seg").count() == 2
        for (page, _), answer in zip(students, ("IsNext", "NotNext", "IsNext")):
            page.click(f"#j-item button[data-answer='{answer}']")
            page.wait_for_function("() => document.querySelector('#j-status').textContent.includes('Answer sent')")
        teacher.wait_for_function("() => document.querySelector('#c-answered').textContent === '3'")

        # a reload lands where the class is, with this browser's answer
        phone = students[2][0]
        phone.reload()
        phone.wait_for_selector("#j-class:not([hidden]) button[data-answer='IsNext'][aria-pressed='true']")
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390

        # reveal (the projector's key): students see the truth and the class's bars
        teacher.keyboard.press("r")
        pooled = httpx.get(f"{class_server}/api/sessions/{code}/results",
                           headers={"Authorization": f"Bearer {TOKEN}"}).json()["items"][0]
        truth = pooled["truth"]
        for page, _ in students:
            followed(page, "#j-status", "The answer: " + truth)
            page.wait_for_selector("#j-results .bar-row")
        assert pooled["counts"] == {"IsNext": 2, "NotNext": 1}
        teacher.wait_for_selector("#c-results .bar-row")
        assert "BERT says " + pooled["model"]["answer"] in teacher.text_content("#c-results")
        verdicts = [page.text_content("#j-status") for page, _ in students]
        assert ("You were right." in verdicts[0]) == (truth == "IsNext")
        assert ("You were right." in verdicts[1]) == (truth == "NotNext")
        phone.screenshot(path=str(screenshots / "class_student_390.png"), full_page=True)
        teacher.screenshot(path=str(screenshots / "class_teacher.png"), full_page=True)
        # projector mode hides the nicknames and controls; on an item a strip keeps the code (the QR
        # code comes back with J, the join screen)
        teacher.goto(f"/class?code={code}&projector=1")
        teacher.wait_for_selector("#c-results .bar-row")
        assert not teacher.locator("#c-people").is_visible() and teacher.locator("#c-code").is_visible()
        assert not teacher.locator("#c-qr .qr").is_visible()
        teacher.keyboard.press("j")  # through the server (every projector follows the teacher's J)
        teacher.wait_for_selector("#c-qr .qr", state="visible")
        for rec, page in [(trec, teacher)] + [(r, p) for p, r in students]:
            rec.assert_clean(page)
    finally:
        for context in contexts:
            context.close()


def test_a_local_only_server_says_students_cannot_reach_it(browser, app_server, tmp_path, make_page):
    app = create_app(Settings(models_dir=SHIPPED_MODELS, data_dir=tmp_path, instructor_token=TOKEN))
    with app_server(app) as url:
        context, page, rec = make_page(browser, url, 1280, 720)
        try:
            page.goto(f"/login#token={TOKEN}")
            page.wait_for_url(re.compile(r"/teach"))
            page.goto("/class")
            page.wait_for_selector("#c-start:not([hidden])")
            assert "--host 0.0.0.0" in page.text_content("#c-reach")
            page.click("#c-create")
            page.wait_for_selector("#c-unreachable:not([hidden])")
            assert "--host 0.0.0.0" in page.text_content("#c-unreachable")
            assert page.locator("#c-qr .qr").count() == 0  # no QR of an address students cannot open
            rec.assert_clean(page)
        finally:
            context.close()


def test_label_together_hands_the_pooled_labels_to_the_fine_tune_lab(browser, class_server, make_page):
    """The class page's "Fine-tune on the pooled labels" opens /finetune?class=CODE, which fetches the
    session's labels.jsonl (instructor only) and starts the fine-tune with it as the uploaded task."""
    from app.jobs import training_available

    if not training_available():
        pytest.skip("the fine-tune lab's start form needs the train extra")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    lines = ["What a lovely day", "I lost my keys again", "The cake was wonderful", "It rained all week"]
    r = httpx.post(f"{class_server}/api/sessions", headers=auth,
                   json={"nsp_count": 0, "labels": ["happy", "sad"], "lines": lines})
    assert r.status_code == 201, r.text
    code = r.json()["code"]
    assert httpx.put(f"{class_server}/api/sessions/{code}/state", json={"page": "label"}, headers=auth).status_code == 200
    for k in range(3):  # three students label every line; the third disagrees on the last one
        c = httpx.Client(base_url=class_server)
        assert c.post(f"/api/sessions/{code}/join", json={"nickname": f"Labeller {k}"}).status_code == 200
        for n, truth in enumerate(["happy", "sad", "happy", "sad" if k < 2 else "happy"]):
            r = c.post(f"/api/sessions/{code}/answers", json={"activity": "label", "item": f"l{n + 1}", "answer": truth})
            assert r.status_code == 201, r.text
    task = httpx.get(f"{class_server}/api/sessions/{code}/labels.jsonl", headers=auth).text
    assert task.count("\n") == 4 and '"label": "sad"' in task.splitlines()[3]
    assert httpx.get(f"{class_server}/api/sessions/{code}/labels.jsonl").status_code in (401, 403)

    context, page, rec = make_page(browser, class_server, 1280, 800)
    try:
        teacher_at(page, code)
        page.wait_for_function("() => document.querySelector('#c-code').textContent.length === 7")
        assert page.get_attribute("#c-finetune", "href") == f"/finetune?class={code}"
        page.click("#c-finetune")
        page.wait_for_url(re.compile(r"/finetune\?class="))
        page.wait_for_function("() => /4 labelled lines/.test(document.querySelector('#ft-file-info').textContent)")
        assert page.input_value("#ft-task") == "" and page.is_visible("#ft-upload-box")
        rec.assert_clean(page)
        sent = []

        def capture(route):  # the request the lab sends; no fine-tune is really started here
            sent.append(route.request.post_data_json)
            route.fulfill(status=409, json={"detail": "stopped by the test", "parameter": None})

        page.route("**/api/finetunes", lambda route: capture(route) if route.request.method == "POST"
                   else route.continue_())
        page.click("#ft-go")
        page.wait_for_function("() => /stopped by the test/.test(document.querySelector('#ft-start-note').textContent)")
        assert sent and sent[0]["task_text"] == task and sent[0]["task_name"] == f"class {code} labels"
        assert "task" not in sent[0]
    finally:
        context.close()


def test_the_teacher_closes_the_room_sets_the_places_and_removes_the_silent(browser, class_server, make_page):
    """The roster's room controls (issue 24's API, one click each): Close room refuses new nicknames,
    Places sets the session's size, Remove the silent drops every nickname without an answer."""
    auth = {"Authorization": f"Bearer {TOKEN}"}
    r = httpx.post(f"{class_server}/api/sessions", headers=auth, json={"nsp_count": 1})
    assert r.status_code == 201, r.text
    code = r.json()["code"]
    quiet, keen = httpx.Client(base_url=class_server), httpx.Client(base_url=class_server)
    assert quiet.post(f"/api/sessions/{code}/join", json={"nickname": "Quiet"}).status_code == 200
    assert keen.post(f"/api/sessions/{code}/join", json={"nickname": "Keen"}).status_code == 200
    assert httpx.put(f"{class_server}/api/sessions/{code}/state", json={"page": "nsp"}, headers=auth).status_code == 200
    item = httpx.get(f"{class_server}/api/sessions/{code}", headers=auth).json()["current"]["item"]
    assert keen.post(f"/api/sessions/{code}/answers", json={"activity": "nsp", "item": item, "answer": "IsNext"}).status_code == 201

    def roster(page):
        return page.eval_on_selector_all("#c-people li > span", "ns => ns.map(n => n.textContent)")

    context, page, rec = make_page(browser, class_server, 1280, 720)
    try:
        teacher_at(page, code)
        page.wait_for_function("() => document.querySelectorAll('#c-people li').length === 2")
        for sel in ("#c-room-lock", "#c-remove-silent", "#c-places"):  # on the teacher's one screen
            box = page.locator(sel).bounding_box()
            assert box and box["y"] + box["height"] <= 720, sel
        page.click("#c-room-lock")
        page.wait_for_function("() => document.querySelector('#c-room-lock').getAttribute('aria-pressed') === 'true'")
        refused = httpx.post(f"{class_server}/api/sessions/{code}/join", json={"nickname": "Late"})
        assert refused.status_code == 409 and "closed" in refused.text
        page.fill("#c-places", "25")
        page.press("#c-places", "Tab")
        page.once("dialog", lambda d: d.accept())
        page.click("#c-remove-silent")
        page.wait_for_function("() => document.querySelectorAll('#c-people li').length === 1")
        assert roster(page) == ["✓ Keen"]
        assert httpx.get(f"{class_server}/api/sessions/{code}", headers=auth).json()["joined"] == 1
        listed = {s["code"]: s for s in httpx.get(f"{class_server}/api/sessions", headers=auth).json()["sessions"]}
        assert listed[code]["joined"] == 1  # the teacher's list of sessions counts those still in
        page.wait_for_function("() => document.querySelector('#c-places').value === '25'")
        rec.assert_clean(page)
    finally:
        context.close()
