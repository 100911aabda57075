"""Fill the missing spans (/spans, issue 41 must 3) in Chromium, on a server with a tiny T5: hidden
characters become sentinels in the line T5 reads, each span's card holds what was hidden and what T5
wrote, place by place, with probabilities the page draws exactly as POST /api/spans answers them; the
keyboard hides and shows characters (neighbours join into one span); the seeded random 15 % is the
same for the same seed; the page fits a phone and a projector; and a set without T5 says so plainly,
with no error box."""
from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from app.config import Settings
from app.main import create_app
from tests.app.test_spans import t5_set  # noqa: F401 (the fixture: the tiny set plus a tiny T5)

pytestmark = pytest.mark.browser
TEXT = "the king and the crown"  # in the tiny models' vocabulary
PERCENT = re.compile(r"^(<0\.1|\d{1,3}(?:\.\d)?) %$")


@pytest.fixture(scope="module")
def t5_server(t5_set, app_server, tmp_path_factory):  # noqa: F811 (t5_set: the imported fixture)
    with app_server(create_app(Settings(models_dir=t5_set, data_dir=tmp_path_factory.mktemp("spans-data")))) as url:
        yield url


def spans_api(base: str, body: dict) -> dict:
    with httpx.Client(base_url=base, timeout=30) as client:
        r = client.post("/api/spans", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def drawn(page) -> list[dict]:
    """Each span card as the page drew it: its sentinel, the hidden text, and each written character."""
    return page.eval_on_selector_all("#sp-results .span-card", """cards => cards.map(c => ({
        span: Number(c.dataset.span), truth: c.dataset.truth,
        written: [...c.querySelectorAll('.sp-col[data-char]')].map(x => ({char: x.dataset.char, prob: Number(x.dataset.prob)})),
        shown: [...c.querySelectorAll('.sp-col[data-char] .sp-prob')].map(x => x.textContent)}))""")


def open_spans(make_page, browser, base, query: str, width=1280, height=900):
    context, page, rec = make_page(browser, base, width, height)
    assert page.goto("/spans" + query).ok
    return context, page, rec


def hidden_in_url(page) -> str:
    return parse_qs(urlparse(page.url).query).get("spans", [""])[0]


def test_hidden_characters_become_sentinels_and_the_cards_are_the_apis(browser, make_page, t5_server, screenshots):
    context, page, rec = open_spans(make_page, browser, t5_server, "?text=the+king+and+the+crown&spans=4,8,13,16")
    page.wait_for_selector("#sp-results .span-card")
    assert page.text_content("#sp-corrupted") == "the ⟨0⟩ and ⟨1⟩ crown"
    assert page.locator("#sp-corrupted .sentinel").all_text_contents() == ["⟨0⟩", "⟨1⟩"]
    answer = spans_api(t5_server, {"text": TEXT, "spans": [[4, 8], [13, 16]]})
    cards = drawn(page)
    assert [c["truth"] for c in cards] == ["king", "the"]  # the hidden characters
    assert [(c["span"], c["truth"], c["written"]) for c in cards] == \
        [(s["span"], s["truth"], [{"char": w["char"], "prob": w["prob"]} for w in s["written"]]) for s in answer["spans"]]
    for c in cards:
        for text in c["shown"]:
            m = PERCENT.match(text)
            assert m and (m.group(1) == "<0.1" or 0 <= float(m.group(1)) <= 100), text
    # green where T5 wrote the hidden character, pink where not; the score counts the green ones
    right = sum(w["char"] == t for s in answer["spans"] for t, w in zip(s["truth"], s["written"]))
    assert page.locator("#sp-results .span-card .sp-col mark.fill-ok").count() == right
    assert page.text_content("#sp-score") == f"T5 wrote back {right} of 7 hidden characters right."
    assert page.text_content("#error-box") == "" and "[object Object]" not in page.text_content("main")
    page.screenshot(path=str(screenshots / "spans-desktop.png"), full_page=True)
    rec.assert_clean(page)
    context.close()


def test_the_keyboard_hides_and_shows_and_neighbours_join_into_one_span(browser, make_page, t5_server):
    context, page, rec = open_spans(make_page, browser, t5_server, "?text=the+king+and+the+crown&spans=")
    page.wait_for_selector("#sp-chars button.ch")
    page.wait_for_load_state("networkidle")
    assert page.locator("#sp-chars button.ch[tabindex='0']").count() == 1  # one Tab stop
    page.locator("#sp-chars button.ch[tabindex='0']").focus()
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    assert page.get_attribute("#sp-chars [data-index='4']", "aria-pressed") == "true"
    assert page.get_attribute("#sp-chars [data-index='5']", "aria-pressed") == "true"
    assert hidden_in_url(page) == "4,6"  # two neighbours: one span
    page.wait_for_function("() => [...document.querySelectorAll('#sp-results .span-card')].map(c => c.dataset.truth).join('|') === 'ki'")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")  # a kept character between: a second span
    assert hidden_in_url(page) == "4,6,7,8"
    page.wait_for_function("() => [...document.querySelectorAll('#sp-results .span-card')].map(c => c.dataset.truth).join('|') === 'ki|g'")
    assert page.text_content("#sp-corrupted") == "the ⟨0⟩n⟨1⟩ and the crown"
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("Enter")  # the gap hidden too: the two spans join
    assert hidden_in_url(page) == "4,8"
    page.wait_for_function("() => [...document.querySelectorAll('#sp-results .span-card')].map(c => c.dataset.truth).join('|') === 'king'")
    page.keyboard.press("Enter")
    assert page.get_attribute("#sp-chars [data-index='6']", "aria-pressed") == "false"
    assert hidden_in_url(page) == "4,6,7,8"
    rec.assert_clean(page)
    context.close()


def test_a_random_fifteen_percent_is_the_same_for_the_same_seed(browser, make_page, t5_server):
    context, page, rec = open_spans(make_page, browser, t5_server, "?text=the+king+and+the+crown+and+the+ship+upon+the+sea&spans=")
    page.wait_for_selector("#sp-chars button.ch")
    page.fill("#sp-seed", "3")
    page.click("#sp-random")
    first = hidden_in_url(page)
    bounds = [int(x) for x in first.split(",")]
    hidden = sum(e - s for s, e in zip(bounds[::2], bounds[1::2]))
    assert hidden == int(0.15 * 48 + 0.5) and all(s < e for s, e in zip(bounds[::2], bounds[1::2]))
    assert all(bounds[i] < bounds[i + 1] for i in range(1, len(bounds) - 1, 2))  # a kept character between spans
    page.wait_for_function("n => document.querySelectorAll('#sp-results .span-card').length === n", arg=len(bounds) // 2)
    assert parse_qs(urlparse(page.url).query)["seed"] == ["3"]
    page.click("#sp-next")
    assert page.input_value("#sp-seed") == "4" and hidden_in_url(page) != first
    page.fill("#sp-seed", "3")
    page.click("#sp-random")
    assert hidden_in_url(page) == first
    rec.assert_clean(page)
    context.close()


@pytest.mark.parametrize("width,height,query,name", [
    (390, 844, "", "phone"), (1280, 720, "&projector=1", "projector")])
def test_the_page_fits_a_phone_and_a_projector(browser, make_page, t5_server, screenshots, width, height, query, name):
    context, page, rec = open_spans(make_page, browser, t5_server,
                                    "?text=the+king+and+the+crown+and+the+ship&spans=0,3,9,12,23,26" + query, width, height)
    page.wait_for_function("() => document.querySelectorAll('#sp-results .span-card').length === 3")
    page.wait_for_timeout(200)  # the projector's fit settles
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"/spans scrolls sideways by {overflow}px at {width}px"
    strip = page.locator("#sp-chars").bounding_box()
    assert strip["x"] >= 0 and strip["x"] + strip["width"] <= width  # the characters wrap
    page.screenshot(path=str(screenshots / f"spans-{name}.png"), full_page=True)
    rec.assert_clean(page)
    context.close()


def test_a_set_without_t5_says_so_plainly(page_factory, screenshots):
    page, rec = page_factory(390, 844)
    assert page.goto("/spans").ok
    page.wait_for_selector("#sp-none", state="visible")
    page.wait_for_load_state("networkidle")
    note = page.text_content("#sp-none")
    assert "This model set has no T5" in note and "python -m training train t5" in note
    assert page.text_content("#error-box") == "" and page.locator(".span-card").count() == 0
    assert page.text_content("#sp-status").startswith("This model set has no T5")
    assert page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
    page.screenshot(path=str(screenshots / "spans-no-t5.png"), full_page=True)
    rec.assert_clean(page)


def test_a_409_naming_the_model_shows_the_same_notice(page_factory):
    """/api/models may list a T5 the chosen set cannot run (the server then answers 409 naming `model`)."""
    page, rec = page_factory()

    def with_t5(route):
        models = route.fetch().json()
        models["cards"]["t5"] = {"config": {"context": 64}}
        route.fulfill(json=models)

    page.route("**/api/models", with_t5)
    page.goto("/spans")
    page.wait_for_selector("#sp-none", state="visible")
    assert page.text_content("#error-box") == "" and page.locator(".span-card").count() == 0
    assert page.text_content("#sp-status").startswith("This model set has no T5")


def test_the_static_copy_writes_the_spans_on_the_device(browser, make_page, t5_set, t5_server, tmp_path):  # noqa: F811
    """No server behind the page (python -m app export-static): T5 runs in the browser and the cards hold
    what the server writes for the same body (the same characters, probabilities within 1e-4)."""
    from app.static_build import export
    from tests.browser.test_engine import LOAD_MS, badge
    from tests.browser.test_static_site import PREFIX, plain_server

    export(tmp_path / PREFIX.strip("/"), t5_set)
    answer = spans_api(t5_server, {"text": TEXT, "spans": [[4, 8], [13, 16]]})
    with plain_server(tmp_path) as (base, _):
        context, page, rec = make_page(browser, base, 390, 844)
        page.goto(PREFIX + "spans/?text=the+king+and+the+crown&spans=4,8,13,16")
        page.wait_for_selector("#sp-results .span-card", timeout=LOAD_MS)
        assert badge(page) == "Computed on your device"
        cards = drawn(page)
        assert [(c["span"], c["truth"], [w["char"] for w in c["written"]]) for c in cards] == \
            [(s["span"], s["truth"], [w["char"] for w in s["written"]]) for s in answer["spans"]]
        assert all(abs(w["prob"] - x["prob"]) <= 1e-4 for c, s in zip(cards, answer["spans"]) for w, x in zip(c["written"], s["written"]))
        assert page.text_content("#sp-corrupted") == answer["corrupted"] and page.text_content("#error-box") == ""
        rec.assert_clean(page)
        context.close()
