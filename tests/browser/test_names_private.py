"""Issue 51 must 2: names stay private. No screen a student or the projector sees shows a nickname
beside a score unless the leaderboard is on at that moment, the end screen included. The teacher
turns the leaderboard on (the check below finds the names there, so it can fail), off, and ends the
session; each time every payload a phone or the projector reads without the instructor's token (the
state with a student's cookie and without one, the event stream, the results) and the projector's
and the phone's screens are read."""
from __future__ import annotations

import json
import re

import httpx
import pytest

pytestmark = pytest.mark.browser
TOKEN = "names-private-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
# nicknames no sentence of the NSP bank or the concept check holds, so finding one is finding a name
STUDENTS = {"Quillon": "IsNext", "Vexa": "NotNext", "Mirto": "IsNext"}
PHONE = "Zorbak"
NAMES = [*STUDENTS, PHONE]


@pytest.fixture(scope="module")
def names_server(class_app, tmp_path_factory):
    with class_app(TOKEN, tmp_path_factory.mktemp("data")) as url:
        yield url


def put(base: str, code: str, **state) -> dict:
    r = httpx.put(f"{base}/api/sessions/{code}/state", json=state, headers=AUTH)
    assert r.status_code == 200, r.text
    return r.json()


def named_scores(text: str) -> list[str]:
    """The lines of a screen's text that hold a nickname and a number (a score) together."""
    return [line for line in text.splitlines() if any(n in line for n in NAMES) and re.search(r"\d", line)]


def leaks(payload: dict) -> list[str]:
    """The nicknames a payload carries, besides the reader's own under `me` (the phone's own strip)."""
    rest = json.dumps({k: v for k, v in payload.items() if k != "me"}, ensure_ascii=False)
    return [n for n in NAMES if n in rest]


def phone_text(phone) -> str:
    """The phone's screen, less the strip that names the student to themself ("You are Zorbak in class
    KMT-4HX", a code with digits)."""
    return phone.inner_text("body").replace(phone.inner_text(".j-strip"), "")


def first_event(base: str, code: str) -> dict:
    """The state the event stream gives a phone (no cookie needed to follow a class)."""
    with httpx.stream("GET", f"{base}/api/sessions/{code}/events", timeout=20) as r:
        event = None
        for line in r.iter_lines():
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event == "state":
                return json.loads(line.split(":", 1)[1])
    raise AssertionError("the event stream sent no state")


def payloads(base: str, code: str, student: httpx.Client) -> dict[str, dict]:
    """Every payload a phone or the projector reads without the instructor's token."""
    out = {"state, a student's cookie": student.get(f"/api/sessions/{code}").json(),
           "state, no cookie": httpx.get(f"{base}/api/sessions/{code}").json(),
           "results, a student's cookie": student.get(f"/api/sessions/{code}/results").json(),
           "results, no cookie": httpx.get(f"{base}/api/sessions/{code}/results").json(),
           "event stream": first_event(base, code)}
    for name, body in out.items():
        assert "code" in body, (name, body)  # an answer, not an error
    return out


def test_no_nickname_beside_a_score_once_the_leaderboard_is_off_the_end_included(browser, names_server, make_page,
                                                                                   screenshots):
    base = names_server
    code = httpx.post(f"{base}/api/sessions", json={"nsp_count": 2}, headers=AUTH).json()["code"]
    put(base, code, page="nsp")
    items = [it["item"] for it in httpx.get(f"{base}/api/sessions/{code}", headers=AUTH).json()["items"]["nsp"]]
    students = {name: httpx.Client(base_url=base) for name in STUDENTS}
    for name, s in students.items():
        assert s.post(f"/api/sessions/{code}/join", json={"nickname": name}).status_code == 200
    phone_ctx, phone, phone_rec = make_page(browser, base, 390, 844)
    pr_ctx, pr, pr_rec = make_page(browser, base, 1280, 720)
    try:
        phone.goto(f"/join?code={code}")
        phone.fill("#j-name", PHONE)
        phone.click("#j-go")
        phone.wait_for_selector("#j-class:not([hidden])")
        pr.goto(f"/login#token={TOKEN}")
        pr.wait_for_url(re.compile(r"/teach"))
        pr.goto(f"/class?code={code}&projector=1")
        for item in items:  # everyone answers and the teacher reveals: every student has a score
            put(base, code, page="nsp", item=item)
            for name, s in students.items():
                assert s.post(f"/api/sessions/{code}/answers", json={"activity": "nsp", "item": item,
                                                                     "answer": STUDENTS[name]}).status_code == 201
            assert phone.request.post(f"{base}/api/sessions/{code}/answers", data={
                "activity": "nsp", "item": item, "answer": "IsNext"}).status == 201
            put(base, code, revealed=True)
        me = students["Quillon"]

        # on: the names with their scores are everywhere, and the checks below see them
        put(base, code, leaderboard=True)
        pr.wait_for_selector("#c-leaders:not([hidden]) li")
        phone.wait_for_selector("#j-leaders:not([hidden]) li")
        assert named_scores(pr.inner_text("body")) and named_scores(phone_text(phone))
        seen = payloads(base, code, me)
        assert all(leaks(seen[name]) for name in ("state, a student's cookie", "state, no cookie", "event stream"))

        # off: nowhere, on a screen or in a payload
        put(base, code, leaderboard=False)
        pr.wait_for_selector("#c-leaders", state="hidden")
        phone.wait_for_selector("#j-leaders", state="hidden")
        assert named_scores(pr.inner_text("body")) == [] and named_scores(phone_text(phone)) == []
        for name, body in payloads(base, code, me).items():
            assert leaks(body) == [], name

        # the end, the leaderboard still off: the class against BERT, and no top of the class
        put(base, code, ended=True)
        pr.wait_for_selector(".c-end-score")
        phone.wait_for_function("() => /ended/.test(document.querySelector('#j-title').textContent)")
        for width, height in ((1280, 720), (1024, 768)):
            pr.set_viewport_size({"width": width, "height": height})
            text = pr.inner_text("body")
            assert "the class" in pr.inner_text(".c-end-score") and "Top of the class" not in text
            assert pr.locator(".c-end-top").count() == 0
            assert named_scores(text) == [], f"a nickname beside a score on the projector's end screen: {named_scores(text)}"
            pr.screenshot(path=str(screenshots / f"class-end-private-projector-{width}.png"))
        text = phone_text(phone)
        assert named_scores(text) == [] and not any(n in text for n in STUDENTS), text  # the others' names: none
        phone.screenshot(path=str(screenshots / "class-end-private-phone-390.png"))
        for name, body in payloads(base, code, me).items():
            assert leaks(body) == [], name
        pr_rec.assert_clean(pr)
        phone_rec.assert_clean(phone)
    finally:
        phone_ctx.close()
        pr_ctx.close()
        for s in students.values():
            s.close()
