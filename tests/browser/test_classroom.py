"""The applets as a class uses them (issue 10): the projector at 1280x720 and 1920x1080, Step and
fast sampling giving the same text, the keyboard from a slider, guess-first Mask-Fill, errors in
plain words next to their control on a phone, and the accessibility details (aria-valuetext, one Tab
stop for the character strip, single-key shortcuts that can be switched off, 44 px touch targets).

Real Chromium against a live server on the tiny real models. The share links that restore every
setting, the model set included, are in test_share_links.py."""
from __future__ import annotations

import json
from urllib.parse import parse_qs, quote, urlparse

import httpx
import pytest


pytestmark = pytest.mark.browser

TEXT = "the king and the crown"  # in the tiny models' vocabulary
FINAL_READY = "#g-dists .dist-panel[data-dist='final'] .bar-row"


def query(page) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def post(base: str, path: str, body: dict) -> dict:
    with httpx.Client(base_url=base, timeout=30) as client:
        r = client.post(path, json=body)
    assert r.status_code == 200, r.text
    return r.json()


def get(base: str, path: str) -> dict:
    with httpx.Client(base_url=base, timeout=30) as client:
        return client.get(path).json()


def in_view(page, selector: str) -> bool:
    """The element's box lies inside the viewport (nothing to scroll to see it)."""
    return page.eval_on_selector(selector, """e => { const r = e.getBoundingClientRect();
        return r.width > 0 && r.height > 0 && r.top >= 0 && r.left >= 0 &&
               r.bottom <= window.innerHeight && r.right <= window.innerWidth; }""")


def wait_count(page, n: int) -> None:
    page.wait_for_function("n => document.querySelector('#g-count').textContent === String(n)", arg=n)


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)])
def test_projector_step_shows_knobs_text_and_sampled_panel_on_one_screen(page_factory, screenshots, size):
    page, rec = page_factory(*size)
    page.goto("/generate?projector=1&seed=4&prompt=" + quote("the king"))
    page.wait_for_selector(FINAL_READY)
    page.click("#g-step")
    wait_count(page, 1)
    page.wait_for_selector("#g-dists .dist-panel[data-dist='final'] .bar-row.is-sampled")
    page.screenshot(path=str(screenshots / f"generate-projector-{size[0]}x{size[1]}.png"))
    assert page.evaluate("window.scrollY") == 0
    for selector in ("#g-temp", "#g-topk", "#g-topp", "#g-seed", "#g-step", "#g-text .gen-last",
                     "#g-dists .dist-panel[data-dist='final'] h3",
                     "#g-dists .dist-panel[data-dist='final'] .bar-row.is-sampled"):
        assert in_view(page, selector), f"{selector} is off screen at {size} after Step"
    rec.assert_clean(page)


# ---------------------------------------------------------------- one random stream
def test_step_gives_the_same_text_as_fast_sampling_and_generate(page_factory, live_server):
    page, rec = page_factory()
    prompt, seed = "the ghost", 7
    page.goto(f"/generate?seed={seed}&temperature=0.9&top_k=20&prompt=" + quote(prompt))
    page.wait_for_selector(FINAL_READY)
    for i in range(1, 31):
        page.click("#g-step")
        wait_count(page, i)
    stepped = query(page)["out"]
    assert len(stepped) == 30
    page.click("#g-stream")
    page.wait_for_function("() => document.querySelector('#g-stream-status').textContent.startsWith('Done')", timeout=30000)
    streamed = page.eval_on_selector("#g-stream-text .gen-new", "e => e.textContent").replace("⏎", "")
    assert streamed[:30] == stepped
    assert "are the 30 you stepped" in page.inner_text("#g-stream-status")
    body = {"prompt": prompt, "max_new_tokens": 30, "temperature": 0.9, "top_k": 20, "top_p": 1.0, "seed": seed}
    assert post(live_server, "/api/generate", body)["text"] == stepped
    rec.assert_clean(page)


# ---------------------------------------------------------------- keyboard
def test_keyboard_steps_from_a_slider_and_escape_leaves_it(page_factory):
    page, rec = page_factory()
    page.goto("/generate?prompt=" + quote("the king"))
    page.wait_for_selector(FINAL_READY)
    page.focus("#g-temp")
    page.keyboard.press("ArrowLeft")
    assert page.inner_text("#g-temp-out") == "0.95"
    page.keyboard.press("Enter")  # the documented step key on a slider
    wait_count(page, 1)
    assert page.inner_text("#g-temp-out") == "0.95" and query(page)["temperature"] == "0.95"
    page.keyboard.press("Escape")
    assert page.evaluate("document.activeElement.id") != "g-temp"
    page.keyboard.press("ArrowRight")  # now → steps instead of moving the slider
    wait_count(page, 2)
    assert page.inner_text("#g-temp-out") == "0.95"
    assert "Enter" in page.inner_text(".key-hints") and "Esc" in page.inner_text(".key-hints")
    rec.assert_clean(page)


def test_single_key_shortcuts_can_be_switched_off(page_factory):
    page, rec = page_factory()
    page.goto("/generate?prompt=" + quote("the king"))
    page.wait_for_selector(FINAL_READY)
    page.click("h1")
    page.keyboard.press("Space")
    wait_count(page, 1)
    page.uncheck(".key-hints .shortcuts-switch")
    page.click("h1")
    page.keyboard.press("Space")
    page.keyboard.press("p")
    page.wait_for_timeout(400)
    assert page.inner_text("#g-count") == "1"
    page.reload()  # remembered in this browser
    page.wait_for_selector(FINAL_READY)
    assert not page.is_checked(".key-hints .shortcuts-switch")
    page.click("h1")
    page.keyboard.press("ArrowRight")
    page.wait_for_timeout(400)
    assert page.inner_text("#g-count") == "1"
    rec.assert_clean(page)


def test_character_strip_is_one_tab_stop_moved_with_arrows(page_factory):
    page, rec = page_factory()
    page.goto("/mask-fill?pos=&text=" + quote(TEXT))
    page.wait_for_selector("#mf-corrupt-table .corrupt-accuracy")
    assert page.locator("#mf-chars button[tabindex='0']").count() == 1
    assert page.locator("#mf-chars button[tabindex='-1']").count() == len(TEXT) - 1
    page.focus("#mf-guess")  # the last control before the strip
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('#mf-chars') !== null")
    page.keyboard.press("Tab")  # one press leaves the whole strip
    assert page.evaluate("document.activeElement.closest('#mf-chars') === null")
    page.focus("#mf-chars button[data-index='0']")
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.dataset.index") == "4"
    page.keyboard.press("Enter")
    page.wait_for_selector("#mf-results .mask-card[data-position='4']")
    page.keyboard.press("End")
    assert page.evaluate("document.activeElement.dataset.index") == str(len(TEXT) - 1)
    rec.assert_clean(page)


# ---------------------------------------------------------------- accessibility: sliders
@pytest.mark.parametrize("path", ["/generate", "/mask-fill", "/attention"])
def test_every_slider_announces_its_value_in_words(page_factory, path):
    page, rec = page_factory()
    page.goto(path)
    page.wait_for_load_state("networkidle")
    texts = page.eval_on_selector_all("input[type='range']", "es => es.map(e => [e.id, e.getAttribute('aria-valuetext')])")
    assert texts and all(t for _, t in texts), texts
    if path == "/generate":
        values = dict(texts)
        assert "off" in values["g-topk"] and "off" in values["g-topp"]
        page.focus("#g-topk")
        page.keyboard.press("ArrowRight")
        assert page.get_attribute("#g-topk", "aria-valuetext") == "keep the 1 most likely characters"
    if path == "/mask-fill":
        assert "percent" in page.get_attribute("#mf-rate", "aria-valuetext")
    rec.assert_clean(page)


# ---------------------------------------------------------------- guess first
def test_guess_first_hides_then_reveals_you_vs_bert(page_factory, live_server):
    page, rec = page_factory()
    positions = [4, 5, 10]
    page.goto("/mask-fill?guess=1&pos=4,5,10&text=" + quote(TEXT))
    page.wait_for_selector("#mf-guess-inputs input")
    for p in positions:  # the masked characters are not on the page
        assert page.inner_text(f"#mf-chars button[data-index='{p}'] .ch-glyph") == "?"
        assert page.get_attribute(f"#mf-chars button[data-index='{p}']", "aria-label") == f"Character {p}: hidden, guess it"
    assert page.is_hidden("#mf-text") and page.is_hidden("#mf-corrupt-section")
    assert page.locator("#mf-results .mask-card").count() == 0
    assert page.is_disabled("#mf-reveal")
    guesses = {4: "k", 5: "n", 10: "a"}  # characters of TEXT, so in the tiny vocabulary
    for p, g in guesses.items():
        page.fill(f"#mf-guess-{p}", g)
    page.click("#mf-reveal")
    page.wait_for_function("() => document.querySelectorAll('#mf-results .mask-card').length === 3")
    vocab = get(live_server, "/api/models")["vocab"]["chars"]
    expected = post(live_server, "/api/mask-fill", {"text": TEXT, "positions": positions, "top_k": len(vocab)})
    you = sum(guesses[m["position"]] == m["original"]["char"] for m in expected["masks"])
    bert = sum(m["original"]["rank"] == 1 for m in expected["masks"])
    assert page.inner_text("#mf-score-you") == f"{you} / 3"
    assert page.inner_text("#mf-score-bert") == f"{bert} / 3"
    for p in positions:
        assert page.inner_text(f"#mf-chars button[data-index='{p}'] .ch-glyph") == TEXT[p].replace(" ", "␣")
        card = f"#mf-results .mask-card[data-position='{p}']"
        assert "You guessed" in page.inner_text(card + " .guess-line")
        marks = page.eval_on_selector_all(card + " .bar-row", "rs => rs.map(r => [r.dataset.char, r.className])")
        assert [c for c, cls in marks if "is-guess" in cls] == [guesses[p]]
    assert page.is_visible("#mf-text") and page.is_visible("#mf-corrupt-section")
    rec.assert_clean(page)


# ---------------------------------------------------------------- errors on a phone
def test_errors_are_plain_and_next_to_their_control_on_a_phone(page_factory, live_server):
    page, rec = page_factory(390, 844)
    page.route("**/api/next-token", lambda route: route.fulfill(status=422, content_type="application/json",
               body=json.dumps({"detail": "temperature must be at most 5.0", "parameter": "temperature"})))
    page.goto("/generate?prompt=" + quote("the king"))
    page.wait_for_selector("[data-control='temperature'] .field-error")
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    page.evaluate("document.querySelector('#g-step').click()")
    page.wait_for_timeout(300)
    message = page.inner_text("[data-control='temperature'] .field-error")
    assert message == "This temperature is not allowed here."
    assert in_view(page, "[data-control='temperature'] .field-error")
    assert page.get_attribute("#g-temp", "aria-invalid") == "true"
    assert page.inner_text("#error-box") == ""

    # Mask-Fill: emptying the sentence says so next to it and clears what belonged to the old one
    page, rec = page_factory(390, 844)
    page.goto("/mask-fill?rate=40&pos=4&text=" + quote(TEXT))
    page.wait_for_selector("#mf-corrupt-table .corrupt-accuracy")
    page.wait_for_selector("#mf-results .mask-card")
    page.fill("#mf-text", "")
    page.wait_for_selector("[data-control='text'] .field-error")
    assert page.inner_text("[data-control='text'] .field-error") == "The sentence is empty: type one or choose an example."
    assert in_view(page, "[data-control='text'] .field-error")
    page.wait_for_timeout(500)
    assert page.locator("#mf-corrupt-table .corrupt-accuracy").count() == 0
    assert page.locator("#mf-corrupted .tok").count() == 0
    assert page.locator("#mf-results .mask-card").count() == 0
    assert page.inner_text("#error-box") == ""

    # a paste longer than BERT reads is cut, and the page says so
    max_len = get(live_server, "/api/models")["cards"]["bert"]["config"]["context"] - 2
    page.fill("#mf-text", "the crown " * 40)
    page.wait_for_selector("[data-control='text'] .field-notice")
    assert f"Cut to {max_len} characters" in page.inner_text("[data-control='text'] .field-notice")
    assert "400" in page.inner_text("[data-control='text'] .field-notice")
    assert page.inner_text("#mf-text-count") == str(max_len)
    page.wait_for_selector("#mf-corrupt-table .corrupt-accuracy")
    rec.assert_clean(page)


def test_counts_are_code_points_like_the_server(page_factory, live_server):
    page, rec = page_factory()
    text = "the 👑 king"
    page.goto("/mask-fill?pos=6&text=" + quote(text))
    page.wait_for_selector("#mf-results .mask-card[data-position='6']")
    assert page.inner_text("#mf-text-count") == str(len(text))  # 10 code points, 11 UTF-16 units
    assert page.locator("#mf-chars button.ch").count() == len(text)
    expected = post(live_server, "/api/mask-fill", {"text": text, "positions": [6], "top_k": 5})
    assert page.inner_text("#mf-results .mask-card[data-position='6'] h3").endswith(
        "“" + expected["masks"][0]["original"]["char"] + "”")
    # the attention page cuts at 24 characters counted the same way, and says so
    page.goto("/attention")
    page.wait_for_selector("#a-bert-grid table")
    page.fill("#a-text", "👑" * 30)
    page.wait_for_selector("[data-control='text'] .field-notice")
    assert page.input_value("#a-text") == "👑" * 24
    assert "Cut to 24 characters" in page.inner_text("[data-control='text'] .field-notice")
    assert page.locator("#a-gpt-grid tbody tr").count() == 24
    rec.assert_clean(page)


def test_long_prompt_says_only_the_last_n_characters_are_read(page_factory, live_server):
    page, rec = page_factory()
    context = get(live_server, "/api/models")["cards"]["gpt"]["config"]["context"]
    prompt = "the king " * (context // 9 + 3)
    page.goto("/generate?prompt=" + quote(prompt))
    page.wait_for_selector(FINAL_READY)
    note = page.inner_text("[data-control='prompt'] .field-notice")
    assert f"only the last {context} characters" in note and str(len(prompt)) in note
    rec.assert_clean(page)


# ---------------------------------------------------------------- phones: touch targets, no key hints
def test_touch_targets_and_no_keyboard_hints_on_a_phone(browser, live_server):
    context = browser.new_context(viewport={"width": 390, "height": 844}, base_url=live_server,
                                  has_touch=True, is_mobile=True, service_workers="block")
    try:
        page = context.new_page()
        for path, ready in (("/generate", FINAL_READY), ("/mask-fill", "#mf-corrupt-table .corrupt-accuracy")):
            page.goto(path)
            page.wait_for_selector(ready)
            # a glossary word (button.term) is a word inside a sentence: WCAG 2.5.8 exempts inline targets
            small = page.evaluate("""() => [...document.querySelectorAll('main button:not(.term), main select, main input, header a, header button')]
                .filter(e => e.getClientRects().length && getComputedStyle(e).visibility !== 'hidden')
                .map(e => [e.id || e.textContent.trim().slice(0, 20),
                           (e.type === 'checkbox' && e.closest('.check') || e).getBoundingClientRect()])
                .filter(([, r]) => r.height < 44 && !(r.width === 0))
                .map(([n, r]) => n + ':' + Math.round(r.height))""")
            assert not small, f"{path}: touch targets under 44 px: {small}"
            assert page.locator(".key-hints").first.is_hidden()
        # the three distributions: one at a time, switched by tabs, on one screen
        page.goto("/generate")
        page.wait_for_selector(FINAL_READY)
        assert page.locator("#g-dists .dist-panel:visible").count() == 1
        page.click("#g-tab-raw")
        assert page.is_visible("#g-dists .dist-panel[data-dist='raw']")
        assert page.is_hidden("#g-dists .dist-panel[data-dist='final']")
        assert page.eval_on_selector("#g-dists", "e => e.getBoundingClientRect().height") < 844
    finally:
        context.close()


def test_nsp_single_key_answers_can_be_switched_off(page_factory):
    page, rec = page_factory()
    page.goto("/nsp?q=0")
    page.wait_for_selector("#n-seq .segment.seg-b")
    page.uncheck(".key-hints .shortcuts-switch")
    page.click("h1")
    page.keyboard.press("i")
    page.keyboard.press("n")
    page.wait_for_timeout(400)
    assert page.inner_text("#n-score-you").startswith("0 /")
    page.check(".key-hints .shortcuts-switch")
    page.click("h1")
    page.keyboard.press("i")
    page.wait_for_function("() => document.querySelector('#n-score-you').textContent.endsWith('/ 1')")
    rec.assert_clean(page)
