"""Guess-first Mask-Fill (issue 18): every mask gets its guess field at once, also the masks added after
turning guess-first on, and Reveal opens only once every mask has a guess."""
from __future__ import annotations

from urllib.parse import quote

import pytest


pytestmark = pytest.mark.browser

TEXT = "the king and the crown"  # in the tiny models' vocabulary


def fields(page) -> list[int]:
    return page.eval_on_selector_all("#mf-guess-inputs input", "is => is.map(i => Number(i.dataset.position))")


def test_masks_added_after_turning_guess_first_on_get_their_fields_at_once(page_factory):
    page, rec = page_factory(390, 844)
    page.goto("/mask-fill?pos=4&text=" + quote(TEXT))
    page.wait_for_selector("#mf-results .mask-card")
    page.check("#mf-guess")
    page.wait_for_selector("#mf-guess-4")
    page.fill("#mf-guess-4", "k")
    for p in (10, 12):  # masked after guess-first was turned on
        page.click(f"#mf-chars button[data-index='{p}']")
        assert page.get_attribute(f"#mf-chars button[data-index='{p}']", "aria-pressed") == "true"
        assert page.inner_text(f"#mf-chars button[data-index='{p}'] .ch-glyph") == "?"
    assert fields(page) == [4, 10, 12]  # no "Hide again" needed
    assert page.input_value("#mf-guess-4") == "k"  # a guess already typed stays
    assert page.inner_text("#mf-guess-status") == "2 guesses to go, then Reveal."
    assert page.is_disabled("#mf-reveal")
    page.fill("#mf-guess-10", "a")
    assert page.is_disabled("#mf-reveal")
    page.click("#mf-chars button[data-index='12']")  # unmasking drops its field, and Reveal opens
    assert fields(page) == [4, 10]
    assert page.is_enabled("#mf-reveal") and page.inner_text("#mf-guess-status") == "All guessed: press Reveal."
    page.click("#mf-chars button[data-index='13']")
    assert fields(page) == [4, 10, 13] and page.is_disabled("#mf-reveal")
    page.fill("#mf-guess-13", "t")
    assert page.is_enabled("#mf-reveal")
    page.click("#mf-reveal")
    page.wait_for_function("() => document.querySelectorAll('#mf-results .mask-card').length === 3")
    for p, guess in {4: "k", 10: "a", 13: "t"}.items():
        assert f"You guessed “{guess}”" in page.inner_text(f"#mf-results .mask-card[data-position='{p}'] .guess-line")
    rec.assert_clean(page)
