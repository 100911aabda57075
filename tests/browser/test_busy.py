"""The applets under backpressure: a busy server's 503 + Retry-After is retried (static/lib/api.js),
and a 503 that persists is shown as the server's sentence, not a broken page."""
from __future__ import annotations

import json

import pytest


pytestmark = pytest.mark.browser

BUSY = {"detail": "the server is busy (more than 32 model requests at once); try again in 1 s", "parameter": None}


def busy_then_real(page, pattern: str, busy_times: int) -> list[int]:
    """Answer the first `busy_times` requests to `pattern` with the server's busy 503."""
    seen = []

    def handler(route):
        seen.append(1)
        if len(seen) <= busy_times:
            route.fulfill(status=503, content_type="application/json", body=json.dumps(BUSY),
                          headers={"Retry-After": "1"})
        else:
            route.continue_()
    page.route(pattern, handler)
    return seen


def test_a_busy_answer_is_retried_after_retry_after(page_factory):
    page, rec = page_factory()
    seen = busy_then_real(page, "**/api/nsp/predict", busy_times=1)
    page.goto("/nsp?q=0&a=the%20king&b=the%20crown")
    page.wait_for_selector("#n-seq .segment.seg-b")
    page.click("#n-predict")
    page.wait_for_selector("#n-own-result .p-is-next", timeout=15000)
    assert len(seen) == 2
    assert page.eval_on_selector("#error-box", "e => e.textContent") == ""
    rec.console_errors = [e for e in rec.console_errors if "503" not in e]  # the browser logs the 503
    rec.assert_clean(page)


def test_a_lasting_busy_answer_is_explained(page_factory):
    page, _ = page_factory()
    seen = busy_then_real(page, "**/api/nsp/predict", busy_times=100)
    page.goto("/nsp?q=0&a=the%20king&b=the%20crown")
    page.wait_for_selector("#n-seq .segment.seg-b")
    page.click("#n-predict")
    # shown beside the button in plain words (no status codes), once the retries are spent
    page.wait_for_selector(".field-error", timeout=15000)
    assert "server is busy" in " ".join(page.eval_on_selector_all(".field-error", "es => es.map(e => e.textContent)"))
    assert len(seen) == 3  # the first try and two retries
