"""Issue 53 must 3 in real browsers: the QR code's link carries the session's join key, so the class
behind one address (every test browser is on 127.0.0.1, as phones behind a school's NAT) gets in by
scanning while a guesser on that address keeps guessing; a phone that typed the code still meets
the door. The page keeps the key on its automatic retries."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from app.classes import guard
from app.classes.guard import CODE_BURST

pytestmark = pytest.mark.browser
TOKEN = "join-key-browser-teacher-token"
SIZES = ((1280, 720), (1024, 768), (390, 844))


@pytest.fixture(scope="module")
def key_server(class_app, tmp_path_factory):
    """A spent address stays spent for the whole module, however slow the machine: no guess refills
    (the server runs in this process, and reads CODE_EVERY_S when its first code route is asked)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(guard, "CODE_EVERY_S", 3600.0)
        with class_app(TOKEN, tmp_path_factory.mktemp("data")) as url:
            yield url


def spend_guesses(base: str, code: str) -> list[int]:
    """Wrong codes from the browsers' own address until it is refused (429)."""
    with httpx.Client(base_url=base) as guesser:
        wrong = [f"KMTK{a}{b}" for a in "ACDEF" for b in "GHJKM" if f"KMTK{a}{b}" != code]
        return [guesser.get(f"/api/sessions/{w}").status_code for w in wrong[:CODE_BURST + 2]]


def test_the_class_joins_by_the_qr_link_past_a_guesser_and_the_typed_code_meets_the_door(browser, key_server,
                                                                                       make_page, screenshots):
    shots = Path(os.environ.get("JOIN_KEY_SHOTS") or screenshots / "join-key")
    shots.mkdir(parents=True, exist_ok=True)
    contexts = []

    def new(width, height):
        context, page, rec = make_page(browser, key_server, width, height)
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
        teacher.wait_for_selector("#c-qr img.qr", state="visible")
        link = teacher.get_attribute("#c-qr", "data-link")
        key = httpx.get(f"{key_server}/api/sessions/{code}", headers={"Authorization": f"Bearer {TOKEN}"}).json()["join_key"]
        assert link == f"{key_server}/join?code={code}&key={key}"
        qr = teacher.get_attribute("#c-qr img.qr", "src")  # the image the server draws is of that link
        assert parse_qs(urlparse(qr).query)["text"] == [link]
        for w, h in SIZES[:2]:
            teacher.set_viewport_size({"width": w, "height": h})
            teacher.screenshot(path=str(shots / f"teacher-lobby-{w}.png"))
        wall, wrec = new(1280, 720)  # the projector's own link (no login) draws the same QR code
        wall.goto(teacher.get_attribute("#c-wall-open", "href"))
        wall.wait_for_selector("#c-qr img.qr", state="visible")
        assert wall.get_attribute("#c-qr", "data-link") == link
        wall.screenshot(path=str(shots / "projector-lobby-1280.png"))
        wrec.assert_clean(wall)

        spent = spend_guesses(key_server, code)
        assert spent[-1] == 429, spent
        joined = []
        for k, (w, h) in enumerate(SIZES):  # phones scan the QR code: in, with no teacher
            phone, rec = new(w, h)
            phone.goto(link)
            assert phone.input_value("#j-code") == code
            phone.fill("#j-name", f"Scan {k + 1}")
            phone.click("#j-go")
            phone.wait_for_selector("#j-class:not([hidden])", timeout=10000)
            phone.screenshot(path=str(shots / f"phone-in-{w}.png"))
            joined.append((phone, rec))
        teacher.wait_for_function("() => document.querySelector('#c-joined').textContent === '3'")

        typed, _ = new(390, 844)  # a phone that typed the code: it cannot be told from a guess
        typed.goto("/join")
        typed.fill("#j-code", code)
        typed.fill("#j-name", "Typed")
        typed.click("#j-go")
        typed.wait_for_function("() => /your teacher now sees “Typed” at the door/.test(document.body.innerText)")
        typed.screenshot(path=str(shots / "phone-typed-door-390.png"))
        assert "Scanning the QR code on the projector gets you in at once" in typed.inner_text("#j-form")
        assert spend_guesses(key_server, code)[-1] == 429  # the guesser is still refused
        assert teacher.inner_text("#c-joined") == "3"
        for phone, rec in joined:  # the page's first read, before joining, is refused (429) as a guess would be
            rec.console_errors = [m for m in rec.console_errors if "status of 429" not in m]
            rec.assert_clean(phone)
        trec.assert_clean(teacher)
    finally:
        for context in contexts:
            context.close()


def test_the_phone_keeps_the_key_on_its_automatic_retries(browser, key_server, make_page):
    """The first try is answered as a spent address's (429 naming `code`, as a race with the guesser
    can): the page's own next try still sends the link's key, and gets in."""
    made = httpx.post(f"{key_server}/api/sessions", json={}, headers={"Authorization": f"Bearer {TOKEN}"}).json()
    code, link = made["code"], made["student_url"]
    key = parse_qs(urlparse(link).query)["key"][0]
    context, phone, rec = make_page(browser, key_server, 390, 844)
    sent = []

    def first_refused(route):
        sent.append(json.loads(route.request.post_data))
        if len(sent) == 1:
            route.fulfill(status=429, headers={"Retry-After": "5"}, content_type="application/json",
                          body=json.dumps({"detail": "too many join codes that match no class came from this network",
                                           "parameter": "code"}))
        else:
            route.continue_()

    try:
        phone.route(re.compile(r".*/api/sessions/[^/]+/join$"), first_refused)
        phone.goto(link)
        phone.fill("#j-name", "Retry")
        phone.click("#j-go")
        phone.wait_for_function("() => /keeps trying by itself/.test(document.body.innerText)")
        phone.wait_for_selector("#j-class:not([hidden])", timeout=12000)  # its next try (every 5 s)
        assert len(sent) == 2 and all(body.get("key") == key for body in sent), sent
        # after joining, the address still holds the key (a reload, or a join again after a removal)
        assert parse_qs(urlparse(phone.url).query)["key"] == [key]
    finally:
        phone.unroute_all(behavior="ignoreErrors")
        context.close()
