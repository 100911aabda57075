"""Real-browser tests of the applets: headless Debian Chromium (Playwright) against a live server
running the tiny real models. Every page must load with no console error, no CSP violation under
the strict policy, and no request to another host; the numbers drawn must be the API's."""
from __future__ import annotations

import re
from urllib.parse import parse_qs, quote, urlparse

import httpx
import pytest

PAGES = {"home": "/", "mask_fill": "/mask-fill", "generate": "/generate", "nsp": "/nsp", "attention": "/attention"}


pytestmark = pytest.mark.browser

# A selector that appears once each page has drawn what it got from the API.
READY = {
    "home": "#h-cards .model-card[data-model='bert'] svg.loss-chart",
    "mask_fill": "#mf-corrupt-table .corrupt-accuracy",
    "generate": "#g-dists .dist-panel[data-dist='final'] .bar-row",
    "nsp": "#n-seq .segment.seg-b",
    "attention": "#a-bert-grid table",
}
TEXT = "the king and the crown"  # in the tiny models' vocabulary


def open_page(page, path: str, name: str, idle: bool = False):
    response = page.goto(path)
    assert response.ok, f"{path}: HTTP {response.status}"
    page.wait_for_selector(READY[name])
    if idle:
        page.wait_for_load_state("networkidle")
    return response


def query(page) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def api(base: str, path: str, body: dict | None = None):
    with httpx.Client(base_url=base, timeout=30) as client:
        r = client.post(path, json=body) if body is not None else client.get(path)
    return r


def drawn_rows(page, scope: str) -> list[dict]:
    return page.eval_on_selector_all(scope + " .bar-row", """rows => rows.map(r => ({
        char: r.dataset.char, prob: Number(r.dataset.prob), text: r.querySelector('.bar-value').textContent,
        marks: r.className}))""")


def pct(p: float) -> str:
    return "0 %" if p == 0 else ("<0.1 %" if p < 0.001 else f"{p * 100:.1f} %")


# ---------------------------------------------------------------- every page: clean, offline, CSP
@pytest.mark.parametrize("name", list(PAGES))
def test_page_is_clean_offline_and_csp_strict(page_factory, screenshots, name):
    for width, height, suffix in ((1280, 900, "desktop"), (375, 812, "phone")):
        page, rec = page_factory(width, height)
        response = open_page(page, PAGES[name], name, idle=True)
        assert "default-src 'self'" in response.headers.get("content-security-policy", "")
        page.wait_for_timeout(150)
        rec.assert_clean(page)
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"{name} scrolls sideways by {overflow}px at {width}px"
        assert page.eval_on_selector("#error-box", "e => e.textContent") == ""
        page.screenshot(path=str(screenshots / f"{name}-{suffix}.png"), full_page=True)
    if name == "generate":
        page, rec = page_factory(1280, 800)
        open_page(page, PAGES[name] + "?projector=1", name, idle=True)
        assert page.evaluate("document.documentElement.classList.contains('projector')")
        page.click("#g-step")
        page.wait_for_function("() => document.querySelector('#g-count').textContent === '1'")
        page.screenshot(path=str(screenshots / "generate-projector.png"), full_page=True)
        rec.assert_clean(page)


# ---------------------------------------------------------------- mask-fill
def test_mask_fill_click_matches_api(page_factory, live_server):
    page, rec = page_factory()
    open_page(page, "/mask-fill?pos=&text=" + quote(TEXT), "mask_fill")
    assert page.locator("#mf-results .mask-card").count() == 0

    def compare(positions: list[int], k: int):
        page.wait_for_function("n => document.querySelectorAll('#mf-results .mask-card').length === n", arg=len(positions))
        page.wait_for_function("k => [...document.querySelectorAll('#mf-results .mask-card')].every("
                               "c => c.querySelectorAll('.bar-row').length === k)", arg=k)
        expected = api(live_server, "/api/mask-fill", {"text": TEXT, "positions": positions, "top_k": k}).json()
        for mask in expected["masks"]:
            card = f"#mf-results .mask-card[data-position='{mask['position']}']"
            rows = drawn_rows(page, card)
            assert [r["char"] for r in rows] == [p["char"] for p in mask["predictions"]]
            for row, pred in zip(rows, mask["predictions"]):
                assert row["prob"] == pytest.approx(pred["prob"], abs=1e-12)
                assert row["text"] == pct(pred["prob"])
                assert ("is-original" in row["marks"]) == (pred["char"] == mask["original"]["char"])
            shown = page.eval_on_selector(card + " .original-prob", "e => Number(e.dataset.prob)")
            assert shown == pytest.approx(mask["original"]["prob"], abs=1e-12)
            assert page.inner_text(card + " .original-rank") == str(mask["original"]["rank"])

    page.click("#mf-chars button[data-index='4']")
    assert page.get_attribute("#mf-chars button[data-index='4']", "aria-pressed") == "true"
    compare([4], 5)
    page.click("#mf-chars button[data-index='17']")
    compare([4, 17], 5)
    page.focus("#mf-k")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert page.inner_text("#mf-k-out") == "8"
    compare([4, 17], 8)
    assert query(page)["pos"] == "4,17" and query(page)["k"] == "8"
    # unmask by keyboard: focus the character and press Enter
    page.focus("#mf-chars button[data-index='17']")
    page.keyboard.press("Enter")
    compare([4], 8)
    rec.assert_clean(page)


def test_mask_fill_corruption_panel_matches_api(page_factory, live_server):
    page, rec = page_factory()
    open_page(page, "/mask-fill?pos=&rate=40&seed=3&text=" + quote(TEXT), "mask_fill")
    expected = api(live_server, "/api/mask-fill/corrupt", {"text": TEXT, "mask_rate": 0.4, "seed": 3}).json()
    n = len(expected["selected"])
    right = sum(s["correct"] for s in expected["selected"])
    assert f"recovered {right} of {n}" in page.inner_text("#mf-corrupt-table .corrupt-accuracy")
    assert page.locator("#mf-corrupted .tok").count() == len(expected["corrupted"])
    page.click("#mf-resample")
    page.wait_for_function("() => document.querySelector('#mf-corrupt-status').textContent.includes('seed 4.')")
    assert page.input_value("#mf-seed") == "4" and query(page)["seed"] == "4"
    rec.assert_clean(page)


def test_api_error_is_shown_in_plain_words(page_factory, live_server):
    """A sentence longer than BERT reads is cut (and the page says so) instead of failing; an API
    error the page cannot avoid is shown next to its control in plain words (test_classroom.py has
    more), and one without a control goes to the assertive error box."""
    page, _ = page_factory()
    long_text = "the king " * 40
    page.goto("/mask-fill?pos=1&text=" + quote(long_text))
    page.wait_for_selector("[data-control='text'] .field-notice")
    max_len = api(live_server, "/api/models").json()["cards"]["bert"]["config"]["context"] - 2
    assert f"Cut to {max_len} characters" in page.inner_text("[data-control='text'] .field-notice")
    page.wait_for_selector("#mf-results .mask-card")
    assert page.inner_text("#error-box") == ""
    page.route("**/api/mask-fill", lambda route: route.fulfill(status=422, content_type="application/json",
               body='{"detail": "text must not be empty", "parameter": "text"}'))
    page.click("#mf-chars button[data-index='4']")
    page.wait_for_selector("[data-control='text'] .field-error")
    assert page.inner_text("[data-control='text'] .field-error") == "The sentence is empty: type one or choose an example."
    page.route("**/api/mask-fill/corrupt", lambda route: route.fulfill(status=500, content_type="application/json",
               body='{"detail": "something broke on the server", "parameter": null}'))
    page.click("#mf-resample")
    page.wait_for_function("() => document.querySelector('#error-box').textContent.length > 0")
    assert "Something broke on the server" in page.inner_text("#error-box")
    assert page.get_attribute("#error-box", "aria-live") == "assertive"


# ---------------------------------------------------------------- generation
def expected_char(dist: dict, seed: int, step: int) -> str:
    """The character THE random stream draws from this /api/next-token answer (app/sampling.py)."""
    import numpy as np

    from app.sampling import Distribution, draw, uniform

    final = np.asarray(dist["final"], dtype=np.float64)
    d = Distribution(raw=final, tempered=final, final=final, kept=final > 0, greedy=False)
    return dist["chars"][draw(d, uniform(seed, step))]


def test_generate_step_undo_and_temperature(page_factory, live_server):
    page, rec = page_factory()
    prompt = "the king"
    open_page(page, "/generate?seed=5&prompt=" + quote(prompt), "generate")
    assert page.inner_text("#g-count") == "0"
    dist = api(live_server, "/api/next-token", {"prompt": prompt, "temperature": 1.0, "top_k": 0, "top_p": 1.0}).json()
    page.click("#g-step")
    page.wait_for_function("() => document.querySelector('#g-count').textContent === '1'")
    first = expected_char(dist, 5, 0)
    assert query(page)["out"] == first
    sampled = drawn_rows(page, "#g-dists .dist-panel[data-dist='final']")
    assert [r["char"] for r in sampled if "is-sampled" in r["marks"]] == [first]

    # keyboard: Space steps, Backspace undoes (focus on the page, not in a text field)
    page.click("h1")
    page.keyboard.press("Space")
    page.wait_for_function("() => document.querySelector('#g-count').textContent === '2'")
    second = query(page)["out"][1]
    page.keyboard.press("Backspace")
    page.wait_for_function("() => document.querySelector('#g-count').textContent === '1'")
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => document.querySelector('#g-count').textContent === '2'")
    assert query(page)["out"][1] == second, "same seed + step + settings must give the same character"

    # moving the temperature slider redraws the current distribution with the API's numbers
    page.wait_for_load_state("networkidle")
    before = page.inner_text("#g-dists .dist-panel[data-dist='tempered'] .entropy-value")
    page.focus("#g-temp")
    for _ in range(10):
        page.keyboard.press("ArrowLeft")
    assert page.inner_text("#g-temp-out") == "0.50" and query(page)["temperature"] == "0.5"
    page.wait_for_function("b => document.querySelector(\"#g-dists .dist-panel[data-dist='tempered'] .entropy-value\")"
                           ".textContent !== b", arg=before)
    page.wait_for_load_state("networkidle")
    text = prompt + query(page)["out"]
    cold = api(live_server, "/api/next-token", {"prompt": text, "temperature": 0.5, "top_k": 0, "top_p": 1.0}).json()
    assert page.inner_text("#g-dists .dist-panel[data-dist='tempered'] .entropy-value") == f"{cold['entropy']['tempered']:.3f}"
    rows = drawn_rows(page, "#g-dists .dist-panel[data-dist='tempered']")
    by_char = dict(zip(cold["chars"], cold["tempered"]))
    for row in rows:
        assert row["prob"] == pytest.approx(by_char[row["char"]], abs=1e-12)
    # greedy at 0
    for _ in range(10):
        page.keyboard.press("ArrowLeft")
    assert page.inner_text("#g-temp-out") == "0 (greedy)"
    rec.assert_clean(page)


def test_generate_stream_matches_server_sampling(page_factory, live_server):
    page, rec = page_factory()
    prompt = "the ghost"
    open_page(page, "/generate?seed=2&temperature=0.8&prompt=" + quote(prompt), "generate")
    page.click("#g-stream")
    page.wait_for_function("() => document.querySelector('#g-stream-status').textContent.startsWith('Done')", timeout=30000)
    assert "200 characters" in page.inner_text("#g-stream-status")
    body = {"prompt": prompt, "max_new_tokens": 200, "temperature": 0.8, "top_k": 0, "top_p": 1.0, "seed": 2}
    expected = api(live_server, "/api/generate", body).json()["text"]
    streamed = page.eval_on_selector("#g-stream-text .gen-new", "e => e.textContent").replace("⏎", "")
    assert streamed == expected
    rec.assert_clean(page)


# ---------------------------------------------------------------- NSP quiz
def test_nsp_answer_updates_score(page_factory, live_server):
    page, rec = page_factory()
    open_page(page, "/nsp?q=0", "nsp")
    item = api(live_server, "/api/nsp/quiz?index=0").json()
    assert page.inner_text("#n-seq .seg-a .seg-text") == item["a"]
    page.click("#n-isnext")
    page.wait_for_function("() => document.querySelector('#n-score-you').textContent.endsWith('/ 1')")
    truth = api(live_server, f"/api/nsp/quiz/{item['id']}/answer", {"guess": "IsNext"}).json()
    assert page.inner_text("#n-score-you") == f"{int(truth['correct'])} / 1"
    assert page.inner_text("#n-score-model") == f"{int(truth['model_correct'])} / 1"
    shown = page.eval_on_selector("#n-result .p-is-next", "e => Number(e.dataset.prob)")
    assert shown == pytest.approx(truth["p_is_next"], abs=1e-12)
    assert page.inner_text("#n-result .truth") == truth["truth"]
    # keys: ArrowRight = next question, N = NotNext
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => document.querySelector('#n-qid').textContent.startsWith('q001')")
    assert query(page)["q"] == "1"
    page.wait_for_function("() => !document.querySelector('#n-notnext').disabled")
    page.keyboard.press("n")
    page.wait_for_function("() => document.querySelector('#n-score-you').textContent.endsWith('/ 2')")
    page.reload()
    page.wait_for_selector(READY["nsp"])
    assert page.inner_text("#n-score-you").endswith("/ 2"), "the score survives a reload (sessionStorage)"
    rec.assert_clean(page)


def test_nsp_own_pair(page_factory, live_server):
    page, rec = page_factory()
    a, b = "SPEAKER1.", "Line 2 speaks of a ship"
    open_page(page, f"/nsp?q=2&a={quote(a)}&b={quote(b)}", "nsp")
    assert page.input_value("#n-a") == a and page.input_value("#n-b") == b
    page.click("#n-predict")
    page.wait_for_selector("#n-own-result .p-is-next")
    expected = api(live_server, "/api/nsp/predict", {"a": a, "b": b}).json()
    shown = page.eval_on_selector("#n-own-result .p-is-next", "e => Number(e.dataset.prob)")
    assert shown == pytest.approx(expected["p_is_next"], abs=1e-12)
    rec.assert_clean(page)


# ---------------------------------------------------------------- shared links, hide=, projector
def test_shared_urls_restore_state(page_factory, live_server):
    page, rec = page_factory()
    open_page(page, "/generate?prompt=the%20king&out=%20an&temperature=0.5&top_k=5&top_p=0.9&seed=3", "generate")
    assert page.input_value("#g-prompt") == "the king"
    assert page.input_value("#g-temp") == "0.5" and page.inner_text("#g-temp-out") == "0.50"
    assert page.input_value("#g-topk") == "5" and page.input_value("#g-topp") == "0.9"
    assert page.input_value("#g-seed") == "3" and page.inner_text("#g-count") == "3"
    assert page.inner_text("#g-text") == "the king an"
    expected = api(live_server, "/api/next-token", {"prompt": "the king an", "temperature": 0.5, "top_k": 5, "top_p": 0.9}).json()
    assert page.inner_text("#g-dists .dist-panel[data-dist='final'] .entropy-value") == f"{expected['entropy']['final']:.3f}"
    final = drawn_rows(page, "#g-dists .dist-panel[data-dist='final']")
    kept = dict(zip(expected["chars"], expected["kept"]))
    assert all(("is-cut" in r["marks"]) == (not kept[r["char"]]) for r in final)
    assert any("is-cut" in r["marks"] for r in final)

    open_page(page, "/mask-fill?text=" + quote(TEXT) + "&pos=4,9&k=7", "mask_fill")
    page.wait_for_function("() => document.querySelectorAll('#mf-results .mask-card').length === 2")
    pressed = page.eval_on_selector_all("#mf-chars button[aria-pressed='true']", "bs => bs.map(b => b.dataset.index)")
    assert pressed == ["4", "9"] and page.input_value("#mf-k") == "7"
    assert page.locator("#mf-results .mask-card[data-position='9'] .bar-row").count() == 7

    open_page(page, "/attention?text=abcd&row=2&pad=1", "attention")
    assert page.input_value("#a-text") == "abcd" and page.input_value("#a-row") == "2"
    assert page.locator("#a-gpt-grid tr.focus-row td.allowed").count() == 3
    assert page.locator("#a-bert-grid tr.focus-row td.allowed").count() == 6  # [CLS] abcd [SEP], not [PAD]

    # Reset restores the defaults and clears the query
    page.click("#a-reset")
    assert page.input_value("#a-text") == "to be or not" and "text" not in query(page)
    rec.assert_clean(page)


def test_hide_and_projector(page_factory):
    page, rec = page_factory()
    open_page(page, "/generate?hide=top_p,seed&projector=1", "generate")
    assert page.is_hidden("[data-control='top_p']") and page.is_hidden("[data-control='seed']")
    assert page.is_visible("[data-control='temperature']")
    assert page.get_attribute("#projector-toggle", "aria-pressed") == "true"
    assert "projector=1" in page.get_attribute("nav a[href^='/mask-fill']", "href")
    page.click("#projector-toggle")
    assert not page.evaluate("document.documentElement.classList.contains('projector')")
    assert "projector" not in query(page) and query(page)["hide"] == "top_p,seed"
    rec.assert_clean(page)


# ---------------------------------------------------------------- keyboard-only use
@pytest.mark.parametrize("name", list(PAGES))
def test_keyboard_reaches_every_control(page_factory, name):
    page, rec = page_factory()
    open_page(page, PAGES[name], name)
    total = page.evaluate("""() => {
        // tabindex=-1: members of a roving group (the character strip, the tabs), reached with arrows
        const all = [...document.querySelectorAll('a[href], button, input, select, textarea, summary')]
          .filter(e => !e.disabled && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden')
          .filter(e => e.getAttribute('tabindex') !== '-1')
          // inside a closed fold (<details>): reached once its summary opens it (Chromium lays such content out)
          .filter(e => { const from = e.tagName === 'SUMMARY' ? e.parentElement.parentElement : e.parentElement;
                         return !(from && from.closest('details:not([open])')); });
        all.forEach((e, i) => e.dataset.kbd = String(i));
        return all.length;
    }""")
    assert total > 3
    seen = set()
    page.evaluate("document.activeElement && document.activeElement.blur()")
    for _ in range(total * 2 + 20):
        page.keyboard.press("Tab")
        kbd = page.evaluate("document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.kbd : null")
        if kbd is not None:
            seen.add(kbd)
        if len(seen) == total:
            break
    missing = page.evaluate("ids => ids.map(i => document.querySelector(`[data-kbd='${i}']`).outerHTML.slice(0, 90))",
                            sorted(set(map(str, range(total))) - seen))
    assert not missing, f"not reachable with Tab: {missing}"
    labels = page.evaluate("""() => [...document.querySelectorAll('input, select, textarea')]
        .filter(e => e.getClientRects().length > 0 && !(e.labels && e.labels.length && e.labels[0].textContent.trim()))
        .map(e => e.id)""")
    assert not labels, f"controls without a visible label: {labels}"
    rec.assert_clean(page)


def test_screenshots_are_git_ignored(screenshots):
    ignore = (screenshots.parent / ".gitignore").read_text()
    assert re.search(r"^screenshots/?$", ignore, re.M)


def test_a_long_prompt_streams_by_post(page_factory, live_server):
    """A prompt longer than a URL can carry still streams: the page POSTs it."""
    page, rec = page_factory()
    page.goto("/generate?prompt=the")
    page.wait_for_selector("#g-dists .dist-panel[data-dist='final'] .bar-row")
    page.fill("#g-prompt", "the king and the crown " * 400)  # 9,200 characters
    with page.expect_request(lambda r: r.url.endswith("/api/generate/stream") and r.method == "POST"):
        page.click("#g-stream")
    page.wait_for_function("() => document.querySelector('#g-stream-status').textContent.startsWith('Done')")
    assert "characters sampled by the server" in page.inner_text("#g-stream-status")
