"""Issue 44 must 2 on the shipped set's static copy: the attention page's graphs read the weights files
Generation's GPT and Mask-Fill's BERT already brought (training/export/web.py shares them), so a
student who opened those two pages downloads under 1 MB for The mask; T5's and PLM's attention graphs
(the set's optional families) come only when the student asks, with their size on the button."""
from __future__ import annotations

from pathlib import Path

import pytest

from app.static_build import export
from tests.browser.test_engine import LOAD_MS
from tests.browser.test_static_site import PREFIX, plain_server

pytestmark = pytest.mark.browser


def moved(root: Path, paths: list[str]) -> int:
    """Bytes of the .gz files these requests fetched (the server sends files as they are)."""
    return sum((root / p.lstrip("/")).stat().st_size for p in paths if p.endswith(".gz"))


def test_the_mask_after_generation_and_mask_fill_downloads_under_1_mb(browser, make_page, tmp_path, screenshots):
    from tests.app.test_engine_node import shipped_web_set

    root = tmp_path / "host"
    export(root / PREFIX.strip("/"), shipped_web_set(tmp_path))
    with plain_server(root) as (base, log):
        context, page, rec = make_page(browser, base, 1280, 900)
        try:
            page.goto(PREFIX + "generate/")
            page.wait_for_selector("#g-dists .dist-panel:not([hidden])", timeout=LOAD_MS)
            page.goto(PREFIX + "mask-fill/")
            page.wait_for_function("() => document.querySelector('#mf-status').textContent.includes('filled')", timeout=LOAD_MS)
            before = len(log)
            page.goto(PREFIX + "attention/")
            page.wait_for_selector("#aw-bert table.heat td", timeout=LOAD_MS)
            page.wait_for_selector("#aw-gpt table.heat td", timeout=LOAD_MS)
            attention = moved(root, log[before:])
            print(f"\nThe mask after Generation and Mask-Fill: {attention} bytes of .gz")
            assert 0 < attention < 1_000_000, (attention, log[before:])  # the graphs' structure, not their weights
            # T5 and PLM: only their rules until the student asks for their weights
            button = page.locator("#aw-t5 button")
            button.wait_for()
            assert "MB)" in button.text_content() and page.locator("#aw-t5 table.heat").count() == 0
            page.locator("#aw-grids").scroll_into_view_if_needed()
            page.screenshot(path=str(screenshots / "static-attention-before-more.png"))
            asked = len(log)
            button.click()
            page.wait_for_selector("#aw-t5 table.heat td", timeout=LOAD_MS)
            page.wait_for_selector("#aw-plm table.heat td", timeout=LOAD_MS)
            more = moved(root, log[asked:])
            print(f"T5 and PLM on request: {more} bytes")
            assert more > 1_000_000  # now T5's and PLM's own attention graphs
            rec.assert_clean(page)
        finally:
            context.close()
