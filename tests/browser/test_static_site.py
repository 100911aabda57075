"""The static copy (python -m app export-static) as a student meets it (issue 35): published under a
sub-path (/playground/, as a GitHub Pages project site serves it) by a plain static server (Python's
http.server serving the parent folder, which sends no compression), in Chromium at 390x844 and 1280x720:
styles and scripts load, Generation and Mask-Fill compute on the device, the browser fetches only the
gzip copies and unpacks them itself, the download shows its progress, a page change does not start
it again, and the pages that need a server are short pages that say so, with no error box or console
error."""
from __future__ import annotations

import functools
import re
import threading
import time
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from app.static_build import NEEDS, export
from tests.browser.test_engine import LOAD_MS, badge, stream_on_device

pytestmark = pytest.mark.browser
SHOTS = Path("/tmp/static-site-shots")
PREFIX = "/playground/"


class Handler(SimpleHTTPRequestHandler):
    """http.server's own handler, recording each GET; `rate` (bytes/s) slows the .gz files down."""
    log: list = []
    rate: float = 0

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.log.append(self.path)
        super().do_GET()

    def copyfile(self, source, outputfile):
        if not (self.rate and self.path.endswith(".gz")):
            return super().copyfile(source, outputfile)
        while chunk := source.read(16384):
            outputfile.write(chunk)
            time.sleep(len(chunk) / self.rate)


@contextmanager
def plain_server(root: Path, rate: float = 0, port: int = 0):
    handler = type("H", (Handler,), {"log": [], "rate": rate})
    server = ThreadingHTTPServer(("127.0.0.1", port), functools.partial(handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler.log
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def site(tiny_models_dir, tmp_path_factory):
    SHOTS.mkdir(exist_ok=True)
    root = tmp_path_factory.mktemp("host")
    export(root / PREFIX.strip("/"), tiny_models_dir)
    return root


def failed_requests(page) -> list:
    bad = []
    page.on("response", lambda r: bad.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    return bad


def test_the_copy_works_under_a_sub_path_on_a_plain_server(browser, make_page, site, tiny_models_dir, tmp_path):
    SHOTS.mkdir(exist_ok=True)
    settings = Settings(models_dir=tiny_models_dir, data_dir=tmp_path / "data", instructor_token="t" * 32)
    with TestClient(create_app(settings), base_url="http://localhost") as client:
        expected = client.post("/api/generate", json={"prompt": "the sea ", "max_new_tokens": 200, "seed": 4}).json()["text"]
        question = client.get("/api/nsp/quiz", params={"index": 2}).json()
        graded = client.post(f"/api/nsp/quiz/{question['id']}/answer", json={"guess": "IsNext"}).json()
    with plain_server(site) as (base, log):
        for width, height in ((390, 844), (1280, 720)):
            context, page, rec = make_page(browser, base, width, height)
            bad = failed_requests(page)
            try:
                stream_on_device(page, PREFIX + "generate/?prompt=the%20sea%20&seed=4", expected)
                assert page.evaluate("getComputedStyle(document.querySelector('.site-header')).display") == "flex"  # style.css
                assert "of" in page.inner_text(".engine-status") or "on your device" in page.inner_text(".engine-status")
                page.screenshot(path=str(SHOTS / f"generate-{width}.png"), full_page=width < 1000)
                rec.assert_clean(page)
                page.goto(PREFIX + "mask-fill/")
                page.wait_for_function("() => document.querySelector('#mf-status').textContent.includes('filled')",
                                       timeout=LOAD_MS)
                assert badge(page) == "Computed on your device"
                page.screenshot(path=str(SHOTS / f"mask-fill-{width}.png"))
                rec.assert_clean(page)
                page.goto(PREFIX + "compare/?text=the%20king%20and%20the%20crown&pos=4")
                page.wait_for_function("() => document.querySelector('#c-verdict').textContent.includes('%')", timeout=LOAD_MS)
                assert badge(page) == "Computed on your device" and page.inner_text("#c-strip")
                page.screenshot(path=str(SHOTS / f"compare-{width}.png"), full_page=width < 1000)
                rec.assert_clean(page)
                page.goto(PREFIX + "nsp/?q=2")  # BERT's next-sentence head on the device, the quiz bank shipped
                page.wait_for_function("() => document.querySelector('#n-qid').textContent.startsWith('" + question["id"] + "')",
                                       timeout=LOAD_MS)
                page.click("#n-isnext")
                page.wait_for_selector("#n-result .p-is-next", timeout=LOAD_MS)
                p = float(page.get_attribute("#n-result .p-is-next", "data-prob"))
                assert abs(p - graded["p_is_next"]) < 1e-4 and graded["truth"] in page.inner_text("#n-result")
                assert badge(page) == "Computed on your device"
                page.screenshot(path=str(SHOTS / f"nsp-{width}.png"), full_page=width < 1000)
                rec.assert_clean(page)
                for path in NEEDS:
                    page.goto(PREFIX + path.strip("/") + "/")
                    assert "needs the playground's server" in page.inner_text(".static-note")
                    assert page.inner_text("#error-box") == ""
                    page.click("text=How to run the playground yourself")
                    assert "python -m app" in page.inner_text("main")
                rec.assert_clean(page)
                page.screenshot(path=str(SHOTS / f"self-hosting-{width}.png"))
                page.goto(PREFIX + "train/")
                page.screenshot(path=str(SHOTS / f"train-{width}.png"))
                page.goto(PREFIX)
                assert "this server" not in page.inner_text("main") + page.inner_text("footer")
                page.wait_for_selector("#h-cards > *")
                page.screenshot(path=str(SHOTS / f"home-{width}.png"))
                rec.assert_clean(page)
                assert not bad, bad
            finally:
                context.close()
        web = [p for p in log if "/web/" in p and not p.endswith(("manifest.json", "nsp_quiz.json"))]
        assert web and all(p.endswith(".gz") or p.endswith(".js") for p in web), web  # only the gzip copies move
        assert all(p.startswith(PREFIX) for p in log), [p for p in log if not p.startswith(PREFIX)]


def test_a_page_change_does_not_start_the_download_again(browser, site):
    """The download runs in a service worker (localhost is a secure context): Generation starts it, the
    student moves to Mask-Fill while it runs, and Mask-Fill picks it up where it is."""
    with plain_server(site, rate=1_500_000) as (base, log):
        context = browser.new_context(viewport={"width": 390, "height": 844}, base_url=base)
        try:
            page = context.new_page()
            errors = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(PREFIX + "generate/")
            page.wait_for_function("() => /[1-9]\\.\\d MB of/.test(document.querySelector('.engine-status')?.textContent || '')",
                                   timeout=LOAD_MS)
            shown = page.inner_text(".engine-status")
            assert re.search(r"Downloading the models to your device: \d+\.\d MB of \d+\.\d MB", shown), shown
            page.goto(PREFIX + "mask-fill/")
            page.wait_for_function("() => document.querySelector('#mf-status').textContent.includes('filled')", timeout=LOAD_MS)
            page.goto(PREFIX + "generate/")
            page.wait_for_selector("#g-dists .dist-panel:not([hidden])", timeout=LOAD_MS)
            wasm = [p for p in log if p.endswith(".wasm.gz")]
            assert len(wasm) == 1, log  # fetched once for the three pages
            assert not errors, errors
        finally:
            context.close()


METERED = "Object.defineProperty(navigator, 'connection', {value: {saveData: false, type: 'cellular'}, configurable: true});"
# Safari (every iPhone browser) and Firefox: no navigator.connection at all
NO_CONNECTION = "Object.defineProperty(Navigator.prototype, 'connection', {get: () => undefined, configurable: true});"
WIFI = "Object.defineProperty(navigator, 'connection', {value: {saveData: false, type: 'wifi'}, configurable: true});"


@pytest.mark.parametrize("connection, why", [(METERED, "mobile data"), (NO_CONNECTION, "does not say whether")])
def test_where_the_connection_may_count_data_the_page_asks_before_downloading(browser, make_page, site, connection, why):
    """Issue 44 must 1: mobile data, and a browser with no navigator.connection at all (Safari, so every
    iPhone, and Firefox): nothing over 2 MB moves before a tap; the question says the size and the
    time at a slow phone speed; the tap is remembered for the site."""
    from tests.browser.conftest import FORGET_AGREED

    with plain_server(site) as (base, log):
        context, page, rec = make_page(browser, base, 390, 844)
        try:
            page.add_init_script(FORGET_AGREED)
            page.add_init_script(connection)
            page.goto(PREFIX + "generate/")
            page.wait_for_selector(".engine-status button")
            said = page.inner_text(".engine-status")
            assert re.search(r"downloads \d+\.\d MB once", said) and why in said, said
            assert re.search(r"about \d+ (s|min) at 180 KB/s", said), said
            page.screenshot(path=str(SHOTS / f"ask-generate-390-{'metered' if connection == METERED else 'none'}.png"))
            page.wait_for_timeout(1500)
            assert not [p for p in log if p.endswith(".gz")]  # nothing moves before the student agrees
            page.evaluate("window.scrollTo(0, document.body.scrollHeight)")  # the question stays in view
            assert page.evaluate("""() => { const r = document.querySelector('.engine-status button').getBoundingClientRect();
                return r.top >= 0 && r.bottom <= innerHeight; }""")
            assert page.evaluate("localStorage.getItem('playground-downloads-agreed')") is None
            page.click(".engine-status button")
            page.wait_for_selector("#g-dists .dist-panel:not([hidden])", timeout=LOAD_MS)
            assert [p for p in log if p.endswith(".wasm.gz")]
            assert page.evaluate("localStorage.getItem('playground-downloads-agreed')") == "yes"  # remembered
            rec.assert_clean(page)
        finally:
            context.close()


def test_a_remembered_tap_or_wifi_downloads_without_asking(browser, make_page, site):
    for script in (WIFI, NO_CONNECTION):  # Wi-Fi: never asked; no connection info: the remembered tap
        with plain_server(site) as (base, log):
            context, page, rec = make_page(browser, base, 390, 844)
            try:
                if script == WIFI:
                    from tests.browser.conftest import FORGET_AGREED

                    page.add_init_script(FORGET_AGREED)
                page.add_init_script(script)
                page.goto(PREFIX + "generate/")
                page.wait_for_selector("#g-dists .dist-panel:not([hidden])", timeout=LOAD_MS)
                assert page.locator(".engine-status button").count() == 0
                assert [p for p in log if p.endswith(".wasm.gz")]
                rec.assert_clean(page)
            finally:
                context.close()


def web_requests(rec) -> list[str]:
    return [u for u in rec.requests if "/web/" in u]


@pytest.mark.parametrize("on_phones", [False, True])
def test_on_a_server_phones_download_models_only_when_the_teacher_says(browser, make_page, app_server, tiny_models_dir,
                                                                       tmp_path, on_phones):
    settings = Settings(models_dir=tiny_models_dir, data_dir=tmp_path / "data", instructor_token="t" * 32,
                        models_on_phones=on_phones)
    with app_server(create_app(settings)) as base:
        context, page, rec = make_page(browser, base, 390, 844)
        try:
            page.goto("/generate?prompt=the%20king%20&seed=5")
            page.wait_for_selector("#g-dists .dist-panel:not([hidden])")
            page.wait_for_function("() => document.querySelector('.where-badge').textContent.includes('this server')")
            if on_phones:
                page.wait_for_function("() => (document.querySelector('.engine-status')?.textContent || '').includes('on your device now')",
                                       timeout=LOAD_MS)
                assert any(u.endswith(".wasm.gz") for u in web_requests(rec))
            else:
                page.wait_for_timeout(6000)  # past the 3 s after which a page with --models-on-phones starts
                assert web_requests(rec) == []  # the server answers: the phone stays off the Wi-Fi
            rec.assert_clean(page)
        finally:
            context.close()


def test_the_electra_strip_runs_on_the_device_in_the_shipped_copy(browser, make_page, tmp_path):
    """Objectives in the shipped set's static copy: ELECTRA judges the student's own sentence on the device
    with the server's probabilities; the parts that need the server say so (no error box)."""
    from tests.app.test_engine_node import shipped_web_set

    folder = shipped_web_set(tmp_path)
    export(tmp_path / "host" / "playground", folder)
    text = "To be, or nat to be, that is the quistion"
    with TestClient(create_app(Settings(models_dir=folder, data_dir=tmp_path / "data", instructor_token="t" * 32))) as client:
        server = client.post("/api/objectives/electra", json={"text": text}).json()
    with plain_server(tmp_path / "host") as (base, log):
        context, page, rec = make_page(browser, base, 390, 844)
        try:
            page.goto(PREFIX + "objectives/")
            page.wait_for_function("() => document.querySelector('#o-rtd-own-summary').textContent.includes('flags')", timeout=LOAD_MS)
            shown = page.eval_on_selector_all("#o-rtd-own-strip .tok-note", "es => es.map((e) => e.textContent)")
            assert len(shown) == len(server["chars"])
            assert f"flags {server['flagged']} of" in page.inner_text("#o-rtd-own-summary")
            assert "needs the playground's server" in page.inner_text("#o-summary")
            assert page.inner_text("#error-box") == "" and badge(page) == "Computed on your device"
            assert not [p for p in log if "/web/" in p and ("/gpt." in p or "/bert." in p)]  # the discriminator's model only
            page.locator("#o-rtd-own").scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / "objectives-electra-390.png"))
            rec.assert_clean(page)
        finally:
            context.close()


HEAT_CELLS = "es => es.map((e) => e.title)"


def shown_weights(page, grid: str) -> list[float]:
    """The allowed cells of a heatmap, row by row: the percentage in each cell's title."""
    titles = page.eval_on_selector_all(f"{grid} td:not(.blocked)", HEAT_CELLS)
    return [0.0 if t.endswith("<0.1 %") else float(re.search(r"([\d.]+) %$", t).group(1)) for t in titles]


def test_the_attention_page_runs_on_the_device_in_the_copy(browser, make_page, site, tiny_models_dir, tmp_path):
    """The mask is the worldview in the static copy under /playground/: the inspection graphs download
    when the page opens (not with Generation), and the heatmaps show the server's weights."""
    body = {"text": "the king is dead", "pad": 2, "layer": 1, "head": 0}
    settings = Settings(models_dir=tiny_models_dir, data_dir=tmp_path / "data", instructor_token="t" * 32)
    with TestClient(create_app(settings), base_url="http://localhost") as client:
        server = client.post("/api/attention", json=body).json()
    with plain_server(site, port=18731) as (base, log):
        for width, height in ((390, 844), (1280, 720)):
            context, page, rec = make_page(browser, base, width, height)
            bad = failed_requests(page)
            before = len(log)  # this width's fresh browser context keeps nothing from the last
            try:
                page.goto(PREFIX + "generate/")
                page.wait_for_function("() => (document.querySelector('.engine-status')?.textContent || '').includes('on your device now')",
                                       timeout=LOAD_MS)
                assert not [p for p in log[before:] if "_attn." in p]  # Generation's visit fetches no attention graph
                page.goto(PREFIX + "attention/?text=the%20king%20is%20dead&pad=2&layer=1&head=0&row=5")
                page.wait_for_function("() => document.querySelector('#aw-status').textContent.startsWith('Live')", timeout=LOAD_MS)
                assert badge(page) == "Computed on your device" and page.inner_text("#error-box") == ""
                assert not page.locator(".static-note").count()  # the whole page, not the short one
                for family in ("gpt", "bert"):
                    tokens, w = server[family]["tokens"], server[family]["weights"]
                    allowed = [w[i][j] * 100 for i in range(len(tokens)) for j in range(len(tokens))
                               if (j <= i if family == "gpt" else tokens[j] != "[PAD]")]
                    shown = shown_weights(page, f"#aw-{family}")
                    assert len(shown) == len(allowed) and max(abs(a - b) for a, b in zip(shown, allowed)) <= 0.051
                assert "when this copy of the playground was made" in page.text_content("#aw-check-text")  # in a closed <details>
                assert [p for p in log[before:] if "/gpt_attn." in p] and [p for p in log[before:] if "/bert_attn." in p]
                page.screenshot(path=str(SHOTS / f"attention-{width}.png"), full_page=width < 1000)
                page.locator("#aw-gpt").scroll_into_view_if_needed()  # the weights the device computed
                page.screenshot(path=str(SHOTS / f"attention-weights-{width}.png"))
                rec.assert_clean(page)
                assert not bad, bad
            finally:
                context.close()
