"""Phones show the control first (issue 51 must 4). The rehearsal found the header, the navigation and the
toolbar taking about 350 of a phone's 844 px, so with the intro no control showed on the first screen
(the NSP Quiz's buttons were below the fold), and a chosen answer was a grey outline on pale buttons.
At 390x844 on a touch phone: each applet page's first control is inside the first screen on load and
the header is at most 120 px tall; the menu button opens and closes the navigation (keyboard, Escape,
a tap) and its links work; with scripts off every link still shows; the chosen answer is filled and
says so (NSP Quiz, concept check, a class phone's choice buttons). At 1280x720 nothing folds."""
from __future__ import annotations

import pytest

from app.pages import NAV
from tests.browser.stage import box, inside, phone_page

pytestmark = pytest.mark.browser
HEADER_MAX = 120  # px: the header (brand and menu button) on a phone
SETTLE_MS = 700  # what a page draws after its first answers (a model picker, a late chart)
# page -> (the first control a student uses there, what shows once the page has drawn)
FIRST = {
    "/mask-fill": ("#mf-text", "#mf-results .mask-card"),
    "/spans": ("#sp-text", "#sp-status"),
    "/generate": ("#g-prompt", "#g-dists .dist-panel[data-dist='final'] .bar-row"),
    "/nsp": ("#n-isnext", "#n-seq .segment.seg-b"),
    "/attention": ("#a-text", "#a-gpt-grid table"),
    "/compare": ("#c-text", "#c-bert .c-p"),
    "/objectives": ("#o-text", "#o-bert-toks .tok"),
    "/concepts": ("#q-list .q-choice", "#q-list .q-choice"),  # the first question's first choice
    "/train": ("#t-run-h", "#t-runs"),  # a student watches the run (the instructor starts it)
    "/finetune": ("#ft-answer-plot svg", "#ft-answer-legend li"),  # a student reads the lab's answer first (issue 52)
}

QUERY = {"/objectives": "?text=the+king+and+the+crown"}  # the default line is longer than the tiny BERT reads


def settle(page, ready: str) -> None:
    """Drawn: the page's own parts are there (the Train page keeps a stream open: no network idle)."""
    page.wait_for_selector(ready, state="attached")
    page.wait_for_load_state("load")
    page.wait_for_timeout(SETTLE_MS)
    page.evaluate("window.scrollTo(0, 0)")


@pytest.mark.parametrize("path", list(FIRST))
def test_a_phone_shows_the_first_control_on_the_first_screen(browser, live_server, screenshots, path):
    first, ready = FIRST[path]
    context, page, rec = phone_page(browser, live_server)
    try:
        assert page.goto(path + QUERY.get(path, "")).ok
        settle(page, ready)
        header = box(page, ".site-header")
        assert header and header["height"] <= HEADER_MAX, f"{path}: the header is {header and header['height']} px tall"
        assert not page.is_visible("nav"), f"{path}: the navigation is open on load"
        assert inside(page, first), f"{path}: {first} is not on the first screen: {box(page, first)}"
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        page.screenshot(path=str(screenshots / f"phone-first{path.replace('/', '-')}.png"))
        rec.assert_clean(page)
    finally:
        context.close()


def test_the_menu_opens_and_closes_with_the_keyboard_and_its_links_work(browser, live_server, screenshots):
    context, page, rec = phone_page(browser, live_server)
    try:
        page.goto("/generate")
        settle(page, FIRST["/generate"][1])
        toggle = page.locator("#menu-toggle")
        assert toggle.is_visible() and toggle.get_attribute("aria-expanded") == "false"
        controlled = toggle.get_attribute("aria-controls")
        assert page.locator(f"#{controlled} a").count() == len(NAV)  # it names the navigation's list
        toggle.focus()
        page.keyboard.press("Enter")
        assert toggle.get_attribute("aria-expanded") == "true"
        for p in NAV:
            link = page.locator(f"nav a[href^='{p.path}']").first
            assert link.is_visible() and link.bounding_box()["height"] >= 43.5, p.path  # a phone's 44 px target
        assert page.is_visible("#projector-toggle") and page.is_visible("#share-quick")  # the header's buttons too
        page.screenshot(path=str(screenshots / "phone-menu-open.png"))
        page.keyboard.press("Tab")  # from the button into the links
        assert page.evaluate("document.activeElement.closest('nav') !== null")
        page.keyboard.press("Escape")
        assert toggle.get_attribute("aria-expanded") == "false" and not page.is_visible("nav")
        assert page.evaluate("document.activeElement.id") == "menu-toggle"  # the focus goes back to the button
        toggle.tap()
        assert page.is_visible("nav")
        page.tap("h1")  # a tap elsewhere closes it
        assert not page.is_visible("nav") and toggle.get_attribute("aria-expanded") == "false"
        toggle.tap()
        with page.expect_navigation():
            page.locator("nav a[href^='/nsp']").tap()
        assert page.url.split("?")[0].endswith("/nsp")
        assert not page.is_visible("nav") and page.get_attribute("nav a[href^='/nsp']", "aria-current") == "page"
        rec.assert_clean(page)
    finally:
        context.close()


def test_without_scripts_every_link_still_shows_on_a_phone(browser, live_server):
    context = browser.new_context(viewport={"width": 390, "height": 844}, base_url=live_server, is_mobile=True,
                                  has_touch=True, java_script_enabled=False, service_workers="block")
    try:
        page = context.new_page()
        page.goto("/nsp")
        assert not page.is_visible("#menu-toggle")  # no button that could not open anything
        assert all(page.locator(f"nav a[href^='{p.path}']").first.is_visible() for p in NAV)
    finally:
        context.close()


def test_a_laptop_keeps_its_navigation_and_its_intro(page_factory):
    page, rec = page_factory(1280, 720)
    page.goto("/finetune")
    page.wait_for_load_state("networkidle")
    assert not page.is_visible("#menu-toggle")
    assert all(page.locator(f"nav a[href^='{p.path}']").first.is_visible() for p in NAV)
    assert page.is_visible("#ft-lead") and page.locator(".intro-fold").count() == 0
    assert page.is_visible("#share-panel > summary")
    rec.assert_clean(page)


def test_a_long_intro_folds_on_a_phone_and_opens_with_a_tap(browser, live_server):
    context, page, rec = phone_page(browser, live_server)
    try:
        page.goto("/nsp")
        settle(page, FIRST["/nsp"][1])
        assert page.locator(".intro-fold .lead").count() == 1 and not page.is_visible("main .lead")
        page.tap(".intro-fold > summary")
        assert page.is_visible("main .lead") and page.is_visible("#n-model-score")
        page.set_viewport_size({"width": 1024, "height": 768})  # turned sideways, or a bigger screen
        assert page.locator(".intro-fold").count() == 0 and page.is_visible("main > .lead")
        rec.assert_clean(page)
    finally:
        context.close()


CHOSEN = """(sel) => [...document.querySelectorAll(sel)].map((b) => {
  const s = getComputedStyle(b), tag = b.querySelector('.chosen-tag, span');
  const mark = (n, where) => n ? getComputedStyle(n, where).content : '';
  return {pressed: b.getAttribute('aria-pressed') || String(!!b.querySelector('input:checked')),
          background: s.backgroundColor, color: s.color, opacity: s.opacity, text: b.innerText,
          marks: [mark(b, '::before'), mark(tag, '::before'), mark(tag, '::after')].join(' ')};
})"""
WHITE_OR_NONE = ("rgb(255, 255, 255)", "rgba(0, 0, 0, 0)")


def filled_and_marked(chosen: dict, other: dict) -> None:
    assert chosen["background"] not in WHITE_OR_NONE and chosen["background"] != other["background"], (chosen, other)
    assert chosen["color"] == "rgb(255, 255, 255)" and chosen["opacity"] == "1", chosen  # white words on the fill
    assert "✓" in chosen["marks"], chosen


def test_the_chosen_answer_is_filled_with_a_check_mark_and_its_words(browser, live_server, screenshots):
    context, page, rec = phone_page(browser, live_server)
    try:
        page.goto("/nsp?q=1")
        settle(page, FIRST["/nsp"][1])
        page.tap("#n-notnext")
        page.wait_for_selector("#n-result .p-is-next")
        chosen, other = sorted(page.evaluate(CHOSEN, "#n-answer-row .btn"), key=lambda b: b["pressed"] != "true")
        assert chosen["pressed"] == "true" and chosen["text"].startswith("NotNext: B is from elsewhere")
        assert "your answer" in chosen["text"] and "your answer" not in other["text"]
        filled_and_marked(chosen, other)
        page.locator("#n-answer-row").scroll_into_view_if_needed()
        page.screenshot(path=str(screenshots / "phone-nsp-chosen.png"))

        page.goto("/concepts")
        settle(page, FIRST["/concepts"][1])
        page.locator("#q-list .q-card").first.locator(".q-choice").nth(1).tap()
        page.wait_for_selector("#q-list .q-card .q-result p")
        labels = page.evaluate(CHOSEN, "#q-list .q-card:first-child .q-choice")
        chosen = next(b for b in labels if b["pressed"] == "true")
        filled_and_marked(chosen, next(b for b in labels if b["pressed"] != "true"))
        assert "your answer" in chosen["marks"]
        page.locator("#q-list .q-card").first.screenshot(path=str(screenshots / "phone-concept-chosen.png"))

        # a class phone's choice buttons (drawn by class_student.js): all disabled once answered, the chosen
        # one must not fade with the others; the same buttons, with the class page's own style sheets
        page.goto("/join")
        page.evaluate("""() => document.querySelector('main').insertAdjacentHTML('afterbegin',
          '<div class="c-choices" id="probe"><button class="btn" aria-pressed="true" disabled>IsNext</button>' +
          '<button class="btn" aria-pressed="false" disabled>NotNext</button></div>')""")
        chosen, other = page.evaluate(CHOSEN, "#probe .btn")
        filled_and_marked(chosen, other)
        assert float(other["opacity"]) < 1  # the one not chosen stays faded
        rec.assert_clean(page)
    finally:
        context.close()
