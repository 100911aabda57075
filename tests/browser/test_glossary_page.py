"""The glossary (app/glossary.json, static/lib/glossary.js): on every student page, each hard word the
page shows (a term with `words`) has a glossary button there, and tapping one at phone width shows
its definition beside the word, inside the screen; the keyboard opens and closes it too."""
from __future__ import annotations

import json
import re

import pytest

from app.glossary import FILE


pytestmark = pytest.mark.browser

TEXT = "the+king+and+the+crown"
STUDENT_PAGES = {  # path -> what shows once the page has drawn its live parts
    "/": ".card", "/mask-fill": "#mf-corrupt-table .corrupt-accuracy", "/generate": "#g-dists", "/nsp": "#n-model-score",
    "/attention": "#aw-bert table.heat td", "/compare": "#c-bert .c-p", "/objectives": "#o-bert-toks .tok",
    "/concepts": "#q-list .q-card", "/train": "main",
}
TERMS = json.loads(FILE.read_text(encoding="utf-8"))["terms"]


def words_on(page) -> str:
    """All the text a student can reach on the page: the main column, folds included (not the hidden glossary)."""
    return page.evaluate("""() => {
        const main = document.querySelector('main').cloneNode(true);
        main.querySelectorAll('script, style, .term-def').forEach((n) => n.remove());
        return main.textContent + ' ' + document.title;
    }""")


@pytest.mark.parametrize("path", list(STUDENT_PAGES))
def test_every_hard_word_on_a_student_page_has_its_definition(page_factory, path):
    page, rec = page_factory(390, 844)
    url = path + ("?text=" + TEXT if path in ("/attention", "/compare", "/objectives") else "")
    if path == "/compare":
        url += "&pos=4"
    assert page.goto(url).ok
    page.wait_for_selector(STUDENT_PAGES[path], state="attached")  # drawn, maybe inside a phone's folded intro
    page.wait_for_load_state("networkidle")
    text = words_on(page)
    defined = set(page.eval_on_selector_all("main button.term", "bs => bs.map(b => b.dataset.term)"))
    glossary = set(page.eval_on_selector_all("#glossary dt", "ds => ds.map(d => d.dataset.term)"))
    assert defined <= glossary
    missing = [key for key, entry in TERMS.items()
               if any(re.search(w, text, re.I) for w in entry.get("words", [])) and key not in defined]
    assert not missing, f"{path} uses {missing} without a glossary button"
    rec.assert_clean(page)


def test_tapping_a_term_at_phone_width_shows_its_definition(browser, live_server):
    context = browser.new_context(viewport={"width": 390, "height": 844}, base_url=live_server, has_touch=True,
                                  is_mobile=True, service_workers="block")
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto("/attention?text=" + TEXT)
    page.wait_for_selector("#aw-bert table.heat td")
    term = page.locator('main button.term[data-term="softmax"]').first
    term.scroll_into_view_if_needed()
    term.tap()
    box = page.locator("main .term-def").first
    box.wait_for()
    assert box.text_content() == TERMS["softmax"]["definition"]
    assert term.get_attribute("aria-expanded") == "true"
    rect = box.bounding_box()
    assert rect and rect["x"] >= 0 and rect["x"] + rect["width"] <= 390 + 0.5
    assert page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
    term.click()  # pressing again hides it
    assert page.locator("main .term-def").count() == 0
    # the keyboard: Enter opens, Escape closes
    term.focus()
    page.keyboard.press("Enter")
    page.locator("main .term-def").first.wait_for()
    page.keyboard.press("Escape")
    assert page.locator("main .term-def").count() == 0 and term.get_attribute("aria-expanded") == "false"
    assert not errors
    context.close()
