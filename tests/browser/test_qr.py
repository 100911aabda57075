"""The share panel's QR code (static/lib/qr.js, written for this project) against an independent encoder:
every module of the symbol equals segno's for the same text, version and mask (qr_golden.json says
how it was made). Covers versions 1, 3, 8 (version information, two block groups) and 15, all eight
masks, and UTF-8 text."""
from __future__ import annotations

import json
from pathlib import Path

import pytest


pytestmark = pytest.mark.browser

GOLDEN = json.loads((Path(__file__).parent / "qr_golden.json").read_text())


def test_qr_symbols_equal_an_independent_encoder(page_factory):
    page, rec = page_factory()
    page.goto("/attention")
    page.wait_for_selector("#share-body", state="attached")  # the page's modules have run
    codes = GOLDEN["codes"]
    assert {c["mask"] for c in codes} == set(range(8))
    for code in codes:
        mine = page.evaluate("""async ([text, mask]) => { const q = (await import('/static/lib/qr.js')).encode(text, {mask});
            return {version: q.version, mask: q.mask, rows: q.modules.map(r => r.map(v => v ? '1' : '0').join(''))}; }""",
                             [code["text"], code["mask"]])
        assert mine["version"] == code["version"], code["text"]
        assert mine["rows"] == code["rows"], f"{code['text']!r} mask {code['mask']}"
    # the chosen mask is one of the eight, and the symbol is the one drawn with it
    auto = page.evaluate("async t => (await import('/static/lib/qr.js')).encode(t).mask", codes[0]["text"])
    assert auto in range(8)
    assert page.evaluate("async l => (await import('/static/lib/qr.js')).encode('x'.repeat(l))", 667) is None  # past version 20 at level M
    rec.assert_clean(page)


def test_share_panel_draws_the_link_as_a_qr_code(lan_page_factory):
    page, errors = lan_page_factory()  # under a LAN name: on localhost no QR code is drawn (test_share.py)
    page.goto("/generate?prompt=the%20king")
    page.wait_for_selector("#g-dists .dist-panel[data-dist='final'] .bar-row")
    page.click("#share-quick")  # Copy link also opens the panel, so the link and its code are on screen
    page.wait_for_selector("#share-qr svg.qr path")
    before = page.get_attribute("#share-qr svg.qr path", "d")
    expected = page.evaluate("""async () => { const q = (await import('/static/lib/qr.js')).encode(document.querySelector('#share-url').value);
        return q.modules.flat().filter(Boolean).length; }""")
    assert before.count("h1v1h-1z") == expected
    page.check("#share-projector")
    page.wait_for_function("b => document.querySelector('#share-qr svg.qr path').getAttribute('d') !== b", arg=before)
    assert "projector=1" in page.input_value("#share-url")
    assert page.input_value("#share-url").startswith("http://playground.test/generate?")
    assert not errors
