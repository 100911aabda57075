"""Issue 43 must 4 in real browsers: a phone's screen tells the truth. A tap that reaches the server
just after the teacher locked the item is not a red error that stays through the pause and the
end, but a line under the item ("it was not counted"); the pause overlay never covers "the session
has ended"; and while the server is away every class screen says "Reconnecting…" and the phone
takes no taps (none is sent), until the server answers again."""
from __future__ import annotations

import re
import socket
import threading
from urllib.parse import urlparse

import httpx
import pytest

pytestmark = pytest.mark.browser
TOKEN = "truths-browser-teacher-token"


@pytest.fixture(scope="module")
def truths_server(class_app, tmp_path_factory):
    with class_app(TOKEN, tmp_path_factory.mktemp("data")) as url:
        yield url


class Proxy:
    """A TCP relay in front of the server, as the school's Wi-Fi is: `away()` drops every connection and
    refuses new ones (a restart, a dead access point), `back()` lets them through again."""

    def __init__(self, target: str):
        self.target = (urlparse(target).hostname, urlparse(target).port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.up, self.open = True, []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.up:
                client.close()
                continue
            server = socket.create_connection(self.target)
            self.open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self.pump, args=(a, b), daemon=True).start()

    @staticmethod
    def pump(a, b):
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def away(self):
        self.up = False
        for s in self.open:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.open = []

    def back(self):
        self.up = True

    def close(self):
        self.away()
        self.listener.close()


def put(base: str, code: str, **state) -> dict:
    r = httpx.put(f"{base}/api/sessions/{code}/state", json=state, headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200, r.text
    return r.json()


def test_a_late_tap_a_pause_an_end_and_a_lost_connection_on_a_phone(browser, truths_server, make_page, screenshots):
    base, relay = truths_server, None
    code = httpx.post(f"{base}/api/sessions", json={"nsp_count": 2},
                      headers={"Authorization": f"Bearer {TOKEN}"}).json()["code"]
    put(base, code, page="nsp")
    context, phone, rec = make_page(browser, base, 390, 844)
    teacher_ctx, teacher, _ = make_page(browser, base, 1280, 720)
    try:
        phone.goto(f"/join?code={code}")
        phone.fill("#j-name", "Ana")
        phone.click("#j-go")
        phone.wait_for_selector(".c-choices .btn:not([disabled])")
        # the tap leaves as the teacher presses L: the server answers 409 once the lock is in
        locked = threading.Event()

        def hold(route):
            put(base, code, locked=True)
            locked.set()
            route.continue_()

        phone.route(re.compile(r".*/answers$"), hold)
        phone.click(".c-choices .btn >> nth=0")
        phone.wait_for_function("() => /not counted/.test(document.querySelector('#j-status').textContent)")
        assert locked.is_set() and phone.inner_text("#error-box") == ""
        assert "Answers are locked" in phone.inner_text("#j-status")
        phone.unroute(re.compile(r".*/answers$"))
        # the pause covers the phone; the end uncovers it and says so
        put(base, code, paused=True)
        phone.wait_for_selector("#j-paused", state="visible")
        put(base, code, ended=True)
        phone.wait_for_function("() => /ended|over/.test(document.querySelector('#j-title').textContent)")
        assert phone.is_hidden("#j-paused") and phone.inner_text("#error-box") == ""
        # a new class, through the school's Wi-Fi: the server goes away, then comes back
        relay = Proxy(base)
        base = relay.url
        code = httpx.post(f"{base}/api/sessions", json={"nsp_count": 2},
                          headers={"Authorization": f"Bearer {TOKEN}"}).json()["code"]
        put(base, code, page="nsp")
        teacher.goto(f"{base}/login#token={TOKEN}")
        teacher.wait_for_url(re.compile(r"/teach"))
        teacher.goto(f"{base}/class?code={code}")
        phone.goto(f"{base}/join?code={code}")
        phone.fill("#j-name", "Ben")
        phone.click("#j-go")
        phone.wait_for_selector(".c-choices .btn:not([disabled])")
        teacher.wait_for_function("() => document.querySelector('#c-joined').textContent === '1'")
        sent = []
        phone.on("request", lambda r: sent.append(r.url) if r.url.endswith("/answers") else None)
        relay.away()
        phone.wait_for_selector("#c-reconnecting", state="visible", timeout=15000)
        teacher.wait_for_selector("#c-reconnecting", state="visible", timeout=15000)
        assert phone.locator(".c-choices .btn").first.is_disabled()  # no tap while away
        phone.screenshot(path=str(screenshots / "phone-reconnecting-390.png"))
        teacher.screenshot(path=str(screenshots / "teacher-reconnecting-1280.png"))
        relay.back()
        phone.wait_for_selector("#c-reconnecting", state="hidden", timeout=15000)
        teacher.wait_for_selector("#c-reconnecting", state="hidden", timeout=15000)
        phone.wait_for_selector(".c-choices .btn:not([disabled])")
        assert sent == []
    finally:
        context.close()
        teacher_ctx.close()
        if relay is not None:
            relay.close()
