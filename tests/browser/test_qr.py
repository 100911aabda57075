"""The QR codes on the pages are the server's (GET /api/qr.svg, drawn by segno; tests/app/routers/test_qr_svg.py
checks the image module by module): the share panel shows the code of its very link, follows the link
when it changes, and says why there is no code for a link that is too long or in the static copy."""
from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

pytestmark = pytest.mark.browser


def qr_text(src: str) -> str:
    assert urlparse(src).path == "/api/qr.svg"
    return parse_qs(urlparse(src).query)["text"][0]


def test_share_panel_shows_the_code_of_its_link(lan_page_factory):
    page, errors = lan_page_factory()  # under a LAN name: on localhost no QR code is drawn (test_share_panel.py)
    page.goto("/generate?prompt=the%20king")
    page.wait_for_selector("#g-dists .dist-panel[data-dist='final'] .bar-row")
    page.click("#share-quick")  # Copy link also opens the panel, so the link and its code are on screen
    img = page.wait_for_selector("#share-qr img.qr")
    page.wait_for_function("() => { const i = document.querySelector('#share-qr img.qr'); return i.complete && i.naturalWidth > 0; }")
    before = img.get_attribute("src")
    assert qr_text(before) == page.input_value("#share-url")
    assert "point a phone's camera at it" in img.get_attribute("alt")
    box = img.bounding_box()
    assert box["width"] >= 150 and abs(box["width"] - box["height"]) < 1  # square and big enough to scan
    page.check("#share-projector")
    page.wait_for_function("b => document.querySelector('#share-qr img.qr').getAttribute('src') !== b", arg=before)
    link = page.input_value("#share-url")
    assert "projector=1" in link and link.startswith("http://playground.test/generate?")
    assert qr_text(page.get_attribute("#share-qr img.qr", "src")) == link
    assert not errors


def test_no_code_for_a_link_too_long_or_in_the_static_copy(page_factory):
    page, rec = page_factory()
    page.goto("/attention")
    page.wait_for_selector("#share-body", state="attached")  # the page's modules have run
    made = page.evaluate("""async () => { const { qrImage } = await import('/static/lib/qr.js');
        const fits = qrImage('é'.repeat(333), 'x'), long = qrImage('é'.repeat(334), 'x');
        const meta = document.createElement('meta'); meta.name = 'playground-build'; meta.content = 'static';
        document.head.append(meta);
        const copy = qrImage('http://a.test/', 'x');
        meta.remove();
        return [fits.tagName, long.tagName, long.textContent, copy.tagName, copy.textContent]; }""")
    assert made[0] == "IMG"  # 666 bytes of UTF-8: the most a code holds here
    assert made[1] == "P" and "too long for a QR code (more than 666 bytes)" in made[2]
    assert made[3] == "P" and "no server to draw one" in made[4]
    rec.assert_clean(page)
