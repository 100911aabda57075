"""A guard over every page (issue 25), at 1280x720 and on a 390x844 touch phone: no visible text reads
like a programmer's word ("[object Object]", "undefined", "NaN", "null"); on the phone nothing
scrolls sideways (tables fit or wrap), a student's text is at least 14 px, and every control is a
44 px target. Every activity state of a class session is walked by the lesson rehearsal
(test_lesson_rehearsal.py), which makes the same programmer's-word check on each of its screens."""
from __future__ import annotations

import pytest

from tests.browser.stage import box, inside, overflow, phone_page, programmer_words

pytestmark = pytest.mark.browser
PAGES = ["/", "/mask-fill", "/generate", "/nsp", "/attention", "/compare", "/objectives", "/concepts", "/train",
         "/finetune", "/class", "/join", "/login"]
SETTLE_MS = 1500  # pages draw after their first requests answer

SMALL_TEXT = """() => {
  const out = [];
  const walker = document.createTreeWalker(document.querySelector('main'), NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const p = n.parentElement;
    if (!n.textContent.trim() || !p || !p.getClientRects().length || p.closest('svg, .sr-only, [hidden], details:not([open]) > :not(summary)')) continue;
    const style = getComputedStyle(p);
    if (style.visibility === 'hidden' || parseFloat(style.fontSize) >= 13.95) continue;
    out.push(p.tagName.toLowerCase() + '.' + [...p.classList].join('.') + ' ' + style.fontSize + ' "' + n.textContent.trim().slice(0, 24) + '"');
  }
  return [...new Set(out)].slice(0, 12);
}"""

SMALL_TARGETS = """() => [...document.querySelectorAll(
    'main button:not(.term), main select, main input:not([type=hidden]), main summary, main a.btn, header a, header button')]
  .filter((e) => e.getClientRects().length && getComputedStyle(e).visibility !== 'hidden' && !e.closest('details:not([open]) > :not(summary)'))
  .map((e) => [e.id || e.textContent.trim().slice(0, 24) || e.type,
               ((e.type === 'checkbox' || e.type === 'radio') && e.closest('label, .check') || e).getBoundingClientRect()])
  .filter(([, r]) => r.width > 0 && r.height < 43.5)
  .map(([n, r]) => n + ':' + Math.round(r.height))
  .slice(0, 12)"""


@pytest.mark.parametrize("path", PAGES)
def test_no_programmer_words_on_a_laptop(page_factory, path):
    page, rec = page_factory(1280, 720)
    page.goto(path)
    page.wait_for_load_state("load")
    page.wait_for_timeout(SETTLE_MS)
    assert not programmer_words(page), f"{path} shows {programmer_words(page)}"


@pytest.mark.parametrize("path", PAGES)
def test_a_phone_reads_and_taps_every_page(browser, live_server, path):
    context, page, rec = phone_page(browser, live_server)
    try:
        page.goto(path)
        page.wait_for_load_state("load")
        page.wait_for_timeout(SETTLE_MS)
        assert not programmer_words(page), f"{path} shows {programmer_words(page)}"
        assert overflow(page)["sideways"] <= 0, f"{path} scrolls sideways on a phone by {overflow(page)['sideways']} px"
        small = page.evaluate(SMALL_TEXT)
        assert not small, f"{path}: text under 14 px on a phone: {small}"
        tiny = page.evaluate(SMALL_TARGETS)
        assert not tiny, f"{path}: touch targets under 44 px: {tiny}"
    finally:
        context.close()


@pytest.mark.parametrize("path", ["/mask-fill", "/generate", "/nsp", "/attention", "/finetune"])
def test_an_applet_on_the_projector_has_no_site_chrome(page_factory, path):
    page, rec = page_factory(1280, 720)
    page.goto(path + "?projector=1")
    page.wait_for_load_state("load")
    page.wait_for_timeout(SETTLE_MS)
    for chrome in ("nav", ".brand", ".site-footer", "#model-picker"):
        assert page.locator(f"{chrome}:visible").count() == 0, f"{path}: {chrome} shows in projector mode"
    assert page.is_visible("#projector-toggle")  # the way back stays, small, in a corner
    assert not programmer_words(page)


def test_mask_fill_on_the_projector_shows_the_predictions_beside_the_sentence(page_factory):
    page, rec = page_factory(1280, 720)
    page.goto("/mask-fill?projector=1")
    page.wait_for_selector("#mf-results .bar-row")
    first = "#mf-results > :first-child .bars"  # the first hidden character's predictions
    chars, cards = box(page, "#mf-chars"), box(page, first)
    assert inside(page, "#mf-chars") and inside(page, first), (chars, cards)
    assert cards["left"] >= chars["right"], "the predictions are not beside the sentence"
    assert overflow(page)["sideways"] <= 0
    rec.assert_clean(page)
