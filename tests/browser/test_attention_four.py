"""The mask page's four masks (issue 41 must 3) in Chromium, on a server with a tiny T5 and PLM beside
GPT and BERT: four rule grids side by side (causal, bidirectional, prefix, permuted) whose allowed
cells are what each model's mask allows, four heatmaps whose cells are POST /api/attention's weights,
a new PLM order on O; the grids sit four across at 1280x720 and one above the other on a phone, with
no sideways scroll of the page, and a set without T5 and PLM says so under their rules."""
from __future__ import annotations

import httpx
import numpy as np
import pytest

from app.config import Settings
from app.contract.families import for_page
from app.main import create_app
from tests.app.test_attention_families import four_set  # noqa: F401 (the fixture: tiny set + tiny T5 and PLM)

pytestmark = pytest.mark.browser
MASKED = [s.name for s in for_page("attention")]  # every family with a grid on the page (its spec lists it)


@pytest.fixture(scope="module")
def four_server(four_set, app_server, tmp_path_factory):  # noqa: F811
    with app_server(create_app(Settings(models_dir=four_set, data_dir=tmp_path_factory.mktemp("four-data")))) as url:
        yield url


def attention_api(base: str, body: dict) -> dict:
    with httpx.Client(base_url=base, timeout=60) as client:
        r = client.post("/api/attention", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def allowed_cells(page, family: str) -> np.ndarray:
    rows = page.eval_on_selector_all(f"#a-{family}-grid tbody tr", "trs => trs.map(tr => [...tr.querySelectorAll('td')].map(td => td.classList.contains('allowed')))")
    return np.asarray(rows, dtype=bool)


def heat_titles(page, family: str) -> list[list[str]]:
    return page.eval_on_selector_all(f"#aw-{family} tbody tr", "trs => trs.map(tr => [...tr.querySelectorAll('td')].map(td => td.title))")


def test_four_masks_and_four_heatmaps_are_the_models_own(browser, make_page, four_server, screenshots):
    context, page, rec = make_page(browser, four_server, 1280, 720)
    assert page.goto("/attention?text=the+crown&row=4&pad=1&seed=3").ok
    page.wait_for_selector("#aw-plm table.heat td")
    answer = attention_api(four_server, {"text": "the crown", "pad": 1, "seed": 3})
    for family in (f for f in MASKED if answer[f] is not None):  # the set's four (a family it lacks has no heatmap)
        tokens = answer[family]["tokens"]
        grid = allowed_cells(page, family)
        assert grid.shape == (len(tokens), len(tokens)), family
        weights = np.asarray(answer[family]["weights"])
        # the rule drawn is the one the model used: every blocked cell of the rule got no weight, and
        # every allowed cell's row sums to 1
        assert np.all(weights[~grid] == 0), family
        assert np.allclose((weights * grid).sum(1), 1, atol=2e-3), family
        titles = heat_titles(page, family)
        assert sum(t.endswith("blocked") or "blocked (weight" in t for row in titles for t in row) == int((~grid).sum())
    # T5: the prefix (8 tokens) sees itself both ways; PLM: one query row, marked ?
    t5 = allowed_cells(page, "t5")
    assert t5[0, 7] and not t5[8, 9] and t5[9, 8]
    assert page.locator("#a-plm-grid tbody th").last.text_content() == "?"
    # the grids side by side at 1280x720, four to a row
    tops = page.eval_on_selector_all("#a-grids > .grid-scroll", "ds => ds.map(d => Math.round(d.getBoundingClientRect().top))")
    assert len(tops) == len(MASKED) and len(set(tops)) == -(-len(MASKED) // 4)
    assert page.evaluate("() => document.documentElement.scrollWidth <= innerWidth")
    page.locator("#a-grids").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "attention-four-1280.png"), full_page=True)
    # a new order (O) redraws PLM's grid and asks again with the next seed
    before = allowed_cells(page, "plm")
    page.click("h1")
    page.keyboard.press("o")
    page.wait_for_function("() => new URLSearchParams(location.search).get('seed') === '4'")
    assert not np.array_equal(before, allowed_cells(page, "plm"))
    rec.assert_clean(page)
    context.close()


def test_on_a_phone_the_grids_stack_and_nothing_scrolls_sideways(browser, make_page, four_server, screenshots):
    context, page, rec = make_page(browser, four_server, 390, 844)
    assert page.goto("/attention?text=to+be+or+not").ok
    page.wait_for_selector("#aw-plm table.heat td")
    lefts = page.eval_on_selector_all("#a-grids > .grid-scroll", "ds => ds.map(d => Math.round(d.getBoundingClientRect().left))")
    assert len(set(lefts)) == 1  # one column
    assert page.evaluate("() => document.documentElement.scrollWidth <= innerWidth")
    page.screenshot(path=str(screenshots / "attention-four-phone.png"), full_page=True)
    rec.assert_clean(page)
    context.close()


def test_the_projector_shows_four_grids_without_cutting_them(browser, make_page, four_server, screenshots):
    context, page, rec = make_page(browser, four_server, 1280, 720)
    assert page.goto("/attention?projector=1&text=to+be+or+not").ok
    page.wait_for_selector("#a-plm-grid table")
    cut = page.evaluate("""() => [...document.querySelectorAll('#a-grids table')].some(t => {
        const box = t.closest('.grid-scroll').getBoundingClientRect(), r = t.getBoundingClientRect();
        return r.right > box.right + 1 || r.right > innerWidth; })""")
    assert not cut
    assert page.evaluate("() => document.documentElement.scrollWidth <= innerWidth")
    page.screenshot(path=str(screenshots / "attention-four-projector.png"))
    rec.assert_clean(page)
    context.close()


def test_a_set_without_t5_and_plm_draws_their_rules_and_says_so(page_factory):
    page, rec = page_factory()
    page.goto("/attention?text=abc")
    page.wait_for_selector("#aw-bert table.heat td")
    page.wait_for_selector("#aw-t5 p.note")
    assert "has no T5" in page.text_content("#aw-t5") and "has no PLM" in page.text_content("#aw-plm")
    assert page.locator("#a-t5-grid table").count() == 1 and page.locator("#a-plm-grid table").count() == 1
    rec.assert_clean(page)
