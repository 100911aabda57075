"""/spans tells the truth about its model (issue 54): beside T5's answer the page says what this T5
gets right on lines it never read, writing on its own as the page does (its card's free-running
figures, as `package` measured them), and "What BERT fills here" fills the very same spans with the
set's BERT told each span's length: the characters POST /api/mask-fill answers for those positions,
in the line, the score and each span's card."""
from __future__ import annotations

import json

import httpx
import pytest

from tests.app.test_spans import t5_set  # noqa: F401 (the fixture: the tiny set plus a tiny T5)
from tests.browser.test_spans_page import TEXT, open_spans, t5_server  # noqa: F401 (t5_server: a fixture)

pytestmark = pytest.mark.browser
HIDDEN = [*range(4, 8), *range(13, 16)]  # "king" and "the" of TEXT


def pct(p: float) -> str:
    """As the page writes a share (static/lib/text.js pct)."""
    return "0 %" if p == 0 else "<0.1 %" if p < 0.001 else f"{100 * p:.1f} %"


def test_the_page_says_what_this_t5_gets_right_and_bert_fills_the_same_spans(browser, make_page, t5_set, t5_server,  # noqa: F811
                                                                               screenshots):
    free = json.loads((t5_set / "t5.card.json").read_text(encoding="utf-8"))["evaluation"]["test"]["free_running"]
    context, page, rec = open_spans(make_page, browser, t5_server, "?text=the+king+and+the+crown&spans=4,8,13,16", 390, 844)
    page.wait_for_selector("#sp-results .span-card")
    note = page.text_content("#sp-truth")
    assert f"On {free['windows']:,} lines from plays it never read" in note
    assert f"it wrote {pct(free['span_char_top1'])} of the hidden characters right and {pct(free['spans_exact'])} " \
           "of the spans exactly right" in note
    assert "not the page's" in note
    assert page.locator("#sp-bert-out .sp-line").count() == 0  # BERT only when asked

    page.click("#sp-bert")
    page.wait_for_selector("#sp-bert-score")
    with httpx.Client(base_url=t5_server, timeout=30) as client:
        r = client.post("/api/mask-fill", json={"text": TEXT, "positions": HIDDEN, "top_k": 1})
    assert r.status_code == 200, r.text
    top1 = {m["position"]: m["predictions"][0]["char"] for m in r.json()["masks"]}
    assert page.locator(".span-card .sp-bert").evaluate_all("els => els.map(e => e.dataset.filled)") == \
        ["".join(top1[p] for p in range(4, 8)), "".join(top1[p] for p in range(13, 16))]
    right = sum(top1[p] == TEXT[p] for p in HIDDEN)
    assert page.text_content("#sp-bert-score") == f"BERT filled {right} of {len(HIDDEN)} hidden characters right."
    assert page.locator("#sp-bert-line mark.fill-ok").count() == right
    assert page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
    page.screenshot(path=str(screenshots / "spans-truth-phone.png"), full_page=True)

    # it follows the spans: hide one more character, and BERT fills the new spans with T5's next answer
    page.click("#sp-chars [data-index='0']")
    page.wait_for_function("() => document.querySelectorAll('.span-card .sp-bert').length === 3")
    assert page.text_content("#sp-bert-score").endswith(f"of {len(HIDDEN) + 1} hidden characters right.")
    assert page.text_content("#error-box") == ""
    rec.assert_clean(page)
    context.close()


def test_the_static_copy_fills_the_same_spans_with_bert_on_the_device(browser, make_page, t5_set, t5_server,  # noqa: F811
                                                                      tmp_path):
    """No server behind the page: BERT fills the spans in the browser, as the server's top-1."""
    from app.static_build import export
    from tests.browser.test_engine import LOAD_MS
    from tests.browser.test_static_site import PREFIX, plain_server

    export(tmp_path / PREFIX.strip("/"), t5_set)
    with httpx.Client(base_url=t5_server, timeout=30) as client:
        top1 = {m["position"]: m["predictions"][0]["char"] for m in client.post(
            "/api/mask-fill", json={"text": TEXT, "positions": HIDDEN, "top_k": 1}).json()["masks"]}
    with plain_server(tmp_path) as (base, _):
        context, page, rec = make_page(browser, base, 1024, 768)
        page.goto(PREFIX + "spans/?text=the+king+and+the+crown&spans=4,8,13,16")
        page.wait_for_selector("#sp-results .span-card", timeout=LOAD_MS)
        page.click("#sp-bert")
        page.wait_for_selector("#sp-bert-score", timeout=LOAD_MS)
        assert page.locator(".span-card .sp-bert").evaluate_all("els => els.map(e => e.dataset.filled)") == \
            ["".join(top1[p] for p in range(4, 8)), "".join(top1[p] for p in range(13, 16))]
        assert page.text_content("#error-box") == ""
        rec.assert_clean(page)
        context.close()
