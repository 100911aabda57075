"""A student's phone against the static copy and the live server (issue 35), for benchmarks/browser_engine.py
(`--phone`): Chromium at 390x844 with its CPU slowed 4x (DevTools' CPU throttling), the static copy
(python -m app export-static) published under /playground/ by a plain static server that sends no
compression, behind a slow-4G link emulated at that server (180 KB/s shared by every connection, 562 ms
before each answer; at the server so that the service worker's downloads are slowed too).

visit(...)       bytes moved and seconds to the first generated character of one visit to Generation
class_bytes(...) the bytes one phone moves on the live server in a lesson (open Generation, generate 200
                 characters), with and without --models-on-phones; x30 for a class
plain_server(root, rate, latency)  Python's http.server on `root` in a thread, slowed; yields (base, log)
"""
from __future__ import annotations

import functools
import threading
import time
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SLOW_4G = {"rate": 180_000, "latency": 0.562}  # bytes/s, s
CPU_SLOWDOWN = 4
PROMPT = "generate/?prompt=To%20be%2C%20or%20not%20to%20be%2C%20&seed=1"
FIRST_CHAR = """() => new Promise((resolve) => {
  const seen = () => (document.querySelector('#g-stream-text .gen-new')?.textContent || '').length > 0;
  const check = () => seen() ? resolve(performance.now()) : setTimeout(check, 50);
  check();
})"""


class Handler(SimpleHTTPRequestHandler):
    """http.server's own handler: records each GET (`log`) and the bytes sent (`sent`); with `rate`
    (bytes/s, one link shared by all connections) and `latency` (s before each answer) it is slow."""
    log: list
    sent: list
    rate: float = 0
    latency: float = 0
    link: dict

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.log.append(self.path)
        if self.latency:
            time.sleep(self.latency)
        super().do_GET()

    def copyfile(self, source, outputfile):
        while chunk := source.read(16384):
            if self.rate:  # reserve the chunk's time on the one shared link, then wait for it
                with self.link["lock"]:
                    start = max(time.monotonic(), self.link["free_at"])
                    self.link["free_at"] = start + len(chunk) / self.rate
                time.sleep(max(0.0, self.link["free_at"] - time.monotonic()))
            outputfile.write(chunk)
            self.sent[0] += len(chunk)


@contextmanager
def plain_server(root: Path, rate: float = 0, latency: float = 0):
    handler = type("H", (Handler,), {"log": [], "sent": [0], "rate": rate, "latency": latency,
                                     "link": {"lock": threading.Lock(), "free_at": 0.0}})
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def phone_page(context):
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": CPU_SLOWDOWN})
    return page


def visit(context, base: str, handler, prefix: str) -> dict:
    """One visit to Generation: click "Generate" as soon as the page is there, wait for its first
    character. Bytes: what the server sent during the visit (every file, the service worker's too)."""
    handler.sent[0] = 0
    page = phone_page(context)
    page.goto(base + prefix + PROMPT, wait_until="domcontentloaded")
    said = page.wait_for_function(
        "() => document.querySelector('.engine-status')?.textContent || (document.querySelector('#g-dists .dist-panel:not([hidden])') ? 'cached' : '')",
        timeout=600_000).json_value()
    asked = page.locator(".engine-status button").count() > 0
    if asked:  # the question before a download (static/lib/compute.js): the student taps Download at once
        page.click(".engine-status button")
    page.click("#g-stream")
    first_ms = page.wait_for_function(FIRST_CHAR, timeout=600_000).json_value()
    page.wait_for_function("() => document.querySelector('#g-stream-status').textContent.startsWith('Done')", timeout=600_000)
    out = {"first_char_s": round(first_ms / 1000, 1), "bytes": handler.sent[0], "status_line": said, "asked": asked}
    page.close()
    return out


def static_visits(browser, site_root: Path, prefix: str = "/playground/") -> dict:
    """The first and second visit of one phone (one browser profile) to the static copy on slow 4G."""
    with plain_server(site_root, **SLOW_4G) as (base, handler):
        context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
        try:
            first = visit(context, base, handler, prefix)
            second = visit(context, base, handler, prefix)
        finally:
            context.close()
    return {"first_visit": first, "second_visit": second}


TRANSFERRED = """() => performance.getEntriesByType('resource').concat(performance.getEntriesByType('navigation'))
  .reduce((sum, e) => sum + (e.transferSize || 0), 0)"""


def class_bytes(browser, base: str, on_phones: bool) -> int:
    """Bytes one phone moves over the Wi-Fi in a short lesson on the live server: open Generation,
    generate 200 characters (the server answers), stay 8 s more (past the 3 s after which a page
    starts downloading the models when the teacher chose models on the phones)."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, base_url=base, service_workers="block")
    try:
        page = context.new_page()
        page.goto("/" + PROMPT.replace("generate/", "generate"))
        page.wait_for_selector("#g-dists .dist-panel:not([hidden])", timeout=120_000)
        page.click("#g-stream")
        page.wait_for_function("() => document.querySelector('#g-stream-status').textContent.startsWith('Done')", timeout=120_000)
        page.wait_for_timeout(8000)
        if on_phones:
            if page.locator(".engine-status button").count():  # asked before the download: the student taps Download
                page.click(".engine-status button")
            page.wait_for_function("() => (document.querySelector('.engine-status')?.textContent || '').includes('on your device now')",
                                   timeout=300_000)
        return int(page.evaluate(TRANSFERRED))
    finally:
        context.close()
