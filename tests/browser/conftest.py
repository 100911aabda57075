"""Browser-suite fixtures: a live uvicorn server on the tiny real models, Debian's headless Chromium
driven by Playwright, and a page wrapper that records console errors, CSP violations and every
request so each test can assert "no errors, nothing fetched from another host".

The Content-Security-Policy is the server's own header (app/security.py); nothing is injected
here, so a violation in these tests is one a student's browser would see."""
from __future__ import annotations

import os
from contextlib import contextmanager
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pytest

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(__file__).parent / "screenshots"
PAGES = {"home": "/", "mask_fill": "/mask-fill", "generate": "/generate", "nsp": "/nsp", "attention": "/attention"}
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="session")
def live_server(request) -> str:
    """Base URL of the app on a free 127.0.0.1 port, serving the tiny models trained by the
    `tiny_models_dir` fixture. PLAYGROUND_TEST_URL points the suite at a running server instead."""
    external = os.environ.get("PLAYGROUND_TEST_URL")
    if external:
        yield external.rstrip("/")
        return
    from app.config import Settings
    from app.main import create_app

    models_dir = request.getfixturevalue("tiny_models_dir")
    with serve(create_app(Settings(models_dir=models_dir))) as url:
        yield url


@pytest.fixture(scope="session")
def app_server():
    """`with app_server(app) as url:` runs an app of a test's own on a free loopback port."""
    return serve


@contextmanager
def serve(app):
    """Run `app` with uvicorn on a free 127.0.0.1 port in a thread; yields its base URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


@pytest.fixture(scope="session")
def class_app():
    """`with class_app(token, data_dir, join_burst) as url:` the app on the shipped models with that
    instructor token, as if started with --public-url (the address students reach is its own) and with
    the join budget a class behind one address (every test browser is on 127.0.0.1) needs."""
    @contextmanager
    def run(token: str, data_dir: Path, join_burst: int = 60):
        from app.config import Settings
        from app.main import create_app
        from tests.conftest import SHIPPED_MODELS

        app = create_app(Settings(models_dir=SHIPPED_MODELS, data_dir=data_dir, instructor_token=token,
                                  class_join_burst=join_burst))
        with serve(app) as url:
            app.state.settings.public_url = url
            yield url
    return run


@pytest.fixture(scope="session")
def browser():
    """Debian's headless Chromium (tests/conftest.py skips every browser test where it is missing)."""
    from playwright import sync_api

    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS)
        opened = b.new_context

        def new_context(*args, **kwargs):  # every context has agreed to downloads (see AGREED)
            context = opened(*args, **kwargs)
            context.add_init_script(AGREED)
            return context

        b.new_context = new_context
        yield b
        b.close()


# Where the browser does not say that the connection is Wi-Fi (desktop Chromium never does), a page
# asks before downloading models (static/lib/compute.js agreed()); the tests' browser has tapped
# "Download" once, as a student does, except where a test takes that back (FORGET_AGREED) to test
# the question itself.
AGREED = "try { localStorage.setItem('playground-downloads-agreed', 'yes'); } catch (e) {}"
FORGET_AGREED = "try { localStorage.removeItem('playground-downloads-agreed'); } catch (e) {}"


@dataclass
class Recorder:
    base: str
    console_errors: list = field(default_factory=list)
    page_errors: list = field(default_factory=list)
    requests: list = field(default_factory=list)

    def foreign_requests(self) -> list[str]:
        own = urlparse(self.base).netloc
        return [u for u in self.requests if urlparse(u).scheme not in ("data", "blob", "about")
                and urlparse(u).netloc != own]

    def assert_clean(self, page) -> None:
        csp = page.evaluate("window.__cspViolations || []")
        assert not self.page_errors, f"uncaught page errors: {self.page_errors}"
        assert not self.console_errors, f"console errors: {self.console_errors}"
        assert not csp, f"CSP violations: {csp}"
        assert not self.foreign_requests(), f"requests to other hosts: {self.foreign_requests()}"


CSP_PROBE = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push(e.violatedDirective + ' ' + (e.blockedURI || '') + ' ' + (e.sourceFile || '') + ':' + e.lineNumber);
});
"""


def new_page(browser, base: str, width: int = 1280, height: int = 900):
    """(context, page, recorder): a fresh browser context at `base` whose page records console errors,
    page errors, CSP violations and every request. The caller closes the context."""
    context = browser.new_context(viewport={"width": width, "height": height}, base_url=base,
                                  service_workers="block")
    rec = Recorder(base)
    page = context.new_page()
    page.add_init_script(CSP_PROBE)
    page.on("console", lambda m: rec.console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: rec.page_errors.append(str(e)))
    page.on("request", lambda r: rec.requests.append(r.url))
    return context, page, rec


@pytest.fixture(scope="session")
def make_page():
    """`make_page(browser, base, width, height)` -> (context, page, recorder) for a server of the
    test's own (`page_factory` is the same on the suite's live_server)."""
    return new_page


def close_contexts(contexts) -> None:
    """Close a test's browser contexts. A request still in flight when the test ends (an image the page
    asked for last) must not raise into the next test: its routes are dropped, quietly, first."""
    for context in contexts:
        for page in context.pages:
            page.unroute_all(behavior="ignoreErrors")
        context.unroute_all(behavior="ignoreErrors")
        context.close()


@pytest.fixture
def page_factory(browser, live_server):
    contexts = []

    def factory(width: int = 1280, height: int = 900):
        context, page, rec = new_page(browser, live_server, width, height)
        contexts.append(context)
        return page, rec

    yield factory
    close_contexts(contexts)


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    return SCREENSHOTS


LAN_ORIGIN = "http://playground.test"  # a LAN name, as a student's phone would use (never resolved: routed)


@pytest.fixture
def lan_page_factory(browser, live_server):
    """`lan_page_factory(width, height)` -> a page whose every request to LAN_ORIGIN is answered by the
    live server, so the page runs under a name other than localhost (the share panel draws its QR code
    only there). Returns (page, page_errors). Chromium logs one console error on any plain-http origin
    that is not localhost (COOP needs a trustworthy origin), so console messages are not collected."""
    contexts = []

    def factory(width: int = 1280, height: int = 900):
        context = browser.new_context(viewport={"width": width, "height": height}, base_url=LAN_ORIGIN,
                                      service_workers="block")
        context.route(LAN_ORIGIN + "/**", lambda route: route.fulfill(
            response=route.fetch(url=live_server + route.request.url[len(LAN_ORIGIN):])))
        contexts.append(context)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        return page, errors

    yield factory
    close_contexts(contexts)
