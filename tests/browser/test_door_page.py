"""Issue 43 must 1 in real browsers: someone on the class's one address (every test browser is on
127.0.0.1, as phones behind a school's NAT) has spent its code guesses; a student types the right
code on a phone, the page says what is happening and keeps trying, the teacher sees the nickname at
the door and lets it in, and the phone is in the class without touching anything."""
from __future__ import annotations

import re

import httpx
import pytest

from app.classes.guard import CODE_BURST

pytestmark = pytest.mark.browser
TOKEN = "door-browser-teacher-token"


@pytest.fixture(scope="module")
def door_server(class_app, tmp_path_factory):
    with class_app(TOKEN, tmp_path_factory.mktemp("data")) as url:
        yield url


def test_a_student_behind_a_guesser_gets_in_when_the_teacher_opens_the_door(browser, door_server, make_page,
                                                                            screenshots, standing_clock):
    """The server runs in this process, so its budgets stand with the test's clock: the guesser's spent
    address cannot refill between its last guess and the phone's click, however slow the machine."""
    teacher_ctx, teacher, trec = make_page(browser, door_server, 1280, 720)
    phone_ctx, phone, prec = make_page(browser, door_server, 390, 844)
    try:
        teacher.goto(f"/login#token={TOKEN}")
        teacher.wait_for_url(re.compile(r"/teach"))
        teacher.goto("/class")
        teacher.click("#c-create")
        teacher.wait_for_function("() => document.querySelector('#c-code').textContent.length === 7")
        code = teacher.evaluate("new URLSearchParams(location.search).get('code')")
        with httpx.Client(base_url=door_server) as guesser:  # the same address as the phone
            wrong = [c for c in ("KMTKMT", "KMTKMA", "KMTKMC", "KMTKMD") if c != code][0]
            codes = [guesser.get(f"/api/sessions/{wrong[:-2]}{a}{b}").status_code
                     for a in "ACDEF" for b in "GHJKM"][:CODE_BURST + 2]
            assert codes[-1] == 429
        phone.goto("/join")
        phone.fill("#j-code", code)
        phone.fill("#j-name", "Ana")
        phone.click("#j-go")
        phone.wait_for_function("() => /your teacher now sees “Ana” at the door/.test(document.body.innerText)")
        assert phone.inner_text("#error-box") == ""  # a calm line under the code, not the red box
        teacher.wait_for_function("() => /At the door.*Ana/.test(document.querySelector('#c-door').innerText)",
                                  timeout=10000)
        assert teacher.is_visible("#c-door-in") and teacher.inner_text("#c-door-in") == "Let them in (1)"
        assert teacher.get_by_role("button", name="Let Ana in").is_visible()  # one name can be picked (issue 53)
        phone.screenshot(path=str(screenshots / "class-door-phone-390.png"))
        teacher.screenshot(path=str(screenshots / "class-door-teacher-1280.png"))
        teacher.click("#c-door-in")
        phone.wait_for_selector("#j-class", state="visible", timeout=12000)  # its next try (every 5 s) gets in
        teacher.wait_for_function("() => document.querySelector('#c-joined').textContent === '1'")
        assert teacher.is_hidden("#c-door")
        trec.assert_clean(teacher)
    finally:
        teacher_ctx.close()
        phone_ctx.close()
