"""Fill the missing spans in the shipped set's static copy (issue 54 must 3): with no server at all, T5
writes the spans back on the student's device from its web copy (its graph and its one weights file),
the server's answer character for character, at 1280x720, 1024x768 and 390x844; and The mask's T5
attention graph then reads the weights file /spans already brought, so asking for T5 and PLM there
downloads PLM's weights and the two graphs' structure, never T5's weights again."""
from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from app.static_build import export
from tests.browser.test_engine import LOAD_MS, badge
from tests.browser.test_spans_page import drawn
from tests.browser.test_static_shared_weights import moved
from tests.browser.test_static_site import PREFIX, plain_server

pytestmark = pytest.mark.browser
TEXT = "To be, or not to be, that is the question."
SPANS = [[3, 5], [13, 16], [30, 34]]
QUERY = "?text=To+be%2C+or+not+to+be%2C+that+is+the+question.&spans=3,5,13,16,30,34"
SIZES = [(1280, 720), (1024, 768), (390, 844)]


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """The shipped set (with its web copies), its static copy under /playground/, and the server's answer."""
    from tests.app.test_engine_node import shipped_web_set

    tmp = tmp_path_factory.mktemp("static-spans")
    folder = shipped_web_set(tmp)
    root = tmp / "host"
    export(root / PREFIX.strip("/"), folder)
    with TestClient(create_app(Settings(models_dir=folder, data_dir=tmp / "data"))) as client:
        answer = client.post("/api/spans", json={"text": TEXT, "spans": SPANS}).json()
    return root, answer


@pytest.mark.parametrize("width,height", SIZES)
def test_t5_writes_the_spans_on_the_device_with_no_server(browser, make_page, shipped, screenshots, width, height):
    root, answer = shipped
    with plain_server(root) as (base, log):
        context, page, rec = make_page(browser, base, width, height)
        try:
            page.goto(PREFIX + "spans/" + QUERY)
            page.wait_for_selector("#sp-results .span-card", timeout=LOAD_MS)
            assert badge(page) == "Computed on your device"
            cards = drawn(page)
            assert [(c["truth"], [w["char"] for w in c["written"]]) for c in cards] == \
                [(s["truth"], [w["char"] for w in s["written"]]) for s in answer["spans"]]
            assert all(abs(w["prob"] - v["prob"]) <= 1e-4 for c, s in zip(cards, answer["spans"])
                       for w, v in zip(c["written"], s["written"]))
            fetched = [p for p in log if "/web/models/" in p and p.endswith(".gz")]
            assert any(Path(p).name.startswith("t5_weights.") for p in fetched), fetched  # its one weights file
            assert not any(Path(p).name.startswith(("gpt", "plm", "electra")) for p in fetched), fetched
            assert page.evaluate("document.documentElement.scrollWidth") <= width  # nothing wider than the screen
            page.screenshot(path=str(screenshots / f"static-spans-{width}x{height}.png"), full_page=True)
            if width == 1280:  # then The mask: T5's attention graph reads the weights /spans brought
                page.goto(PREFIX + "attention/")
                button = page.locator("#aw-t5 button")
                button.wait_for(timeout=LOAD_MS)
                asked = len(log)
                button.click()
                page.wait_for_selector("#aw-t5 table.heat td", timeout=LOAD_MS)
                page.wait_for_selector("#aw-plm table.heat td", timeout=LOAD_MS)
                more = [Path(p).name for p in log[asked:] if p.endswith(".gz")]
                print(f"\nT5 and PLM on The mask after /spans: {moved(root, log[asked:])} bytes of .gz: {more}")
                assert not any(n.startswith("t5_weights.") for n in more) and any(n.startswith("plm_weights.") for n in more)
                assert moved(root, log[asked:]) < 7_000_000  # PLM's 6.8 MB weights; T5's own attention graph: its structure
            rec.assert_clean(page)
        finally:
            context.close()
