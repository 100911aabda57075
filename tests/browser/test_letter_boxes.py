"""Issue 51 must 3: Be the BERT types like one text box on a phone (390x844). Typing "bethe" into the
first box fills the five boxes in order and stores "bethe"; Backspace in an empty box goes back and
clears the one before; ← and → move between boxes; a paste, or several characters at once (a word the
keyboard suggests, an IME), spread from the box they land in; a guess with an empty box is not sent
(the phone says which box is empty) and never padded with spaces; what was typed survives a redraw."""
from __future__ import annotations

import csv
import io
import re

import httpx
import pytest

pytestmark = pytest.mark.browser
TOKEN = "letter-boxes-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SENTENCE, HIDDEN = "to be the one", [3, 4, 6, 7, 8]  # the hidden characters spell "bethe"
BOXES = "#j-item input.c-mask"


@pytest.fixture(scope="module")
def boxes_server(class_app, tmp_path_factory):
    with class_app(TOKEN, tmp_path_factory.mktemp("data")) as url:
        yield url


@pytest.fixture
def phone(browser, boxes_server, make_page, screenshots):
    """A phone in a new class session: (page, session code, show), show() puts a new Be-the-BERT item
    hiding "bethe" on every screen and returns its id."""
    base = boxes_server
    code = httpx.post(f"{base}/api/sessions", json={"nsp_count": 0, "concepts": []}, headers=AUTH).json()["code"]
    context, page, rec = make_page(browser, base, 390, 844)

    def show() -> str:
        made = httpx.post(f"{base}/api/sessions/{code}/items", json={"activity": "fill", "text": SENTENCE,
                                                                     "positions": HIDDEN}, headers=AUTH)
        assert made.status_code == 201, made.text
        item = made.json()["item"]
        assert httpx.put(f"{base}/api/sessions/{code}/state", json={"page": "fill", "item": item},
                         headers=AUTH).status_code == 200
        page.wait_for_function("n => document.querySelector('#j-title').textContent.includes('item ' + n + ' of')",
                               arg=int(item[1:]))
        page.wait_for_selector(f"{BOXES}:not([disabled])")
        return item

    try:
        page.goto(f"/join?code={code}")
        page.fill("#j-name", "Ana")
        page.click("#j-go")
        page.wait_for_selector("#j-class:not([hidden])")
        yield page, code, show
        rec.assert_clean(page)
    finally:
        context.close()


def values(page) -> list[str]:
    return page.eval_on_selector_all(BOXES, "bs => bs.map((b) => b.value)")


def focused(page) -> int | None:
    """Which box has the focus (0-based), or None."""
    box = page.evaluate("() => document.activeElement && document.activeElement.dataset.box")
    return None if box is None else int(box)


def stored(base: str, code: str) -> dict[str, str]:
    """item -> the answer the server keeps, from the instructor's CSV."""
    rows = csv.DictReader(io.StringIO(httpx.get(f"{base}/api/sessions/{code}/export.csv", headers=AUTH).text))
    return {r["item"]: r["answer"] for r in rows}


def send(page) -> None:
    page.click("#j-item .j-send")
    page.wait_for_function("() => /Answer sent/.test(document.querySelector('#j-status').textContent)")


def test_typing_bethe_into_the_first_box_stores_bethe(phone, boxes_server, screenshots):
    page, code, show = phone
    item = show()
    page.click(f"{BOXES} >> nth=0")
    page.keyboard.type("bethe")
    assert values(page) == list("bethe") and focused(page) == 4
    page.screenshot(path=str(screenshots / "class-fill-typed-phone-390.png"))
    send(page)
    assert stored(boxes_server, code) == {item: "bethe"}
    assert page.request.get(f"{boxes_server}/api/sessions/{code}").json()["current"]["your_answer"] == "bethe"
    assert values(page) == list("bethe") and page.locator(BOXES).first.is_disabled()
    labels = page.eval_on_selector_all(BOXES, "bs => bs.map((b) => b.getAttribute('aria-label'))")
    assert labels == [f"hidden character {n} of 5" for n in range(1, 6)]


def test_backspace_goes_back_and_the_arrows_move(phone, boxes_server):
    page, code, show = phone
    item = show()
    page.click(f"{BOXES} >> nth=0")
    page.keyboard.type("bex")
    assert values(page) == ["b", "e", "x", "", ""] and focused(page) == 3
    page.keyboard.press("Backspace")  # box 4 is empty: back to box 3, which empties
    assert values(page) == ["b", "e", "", "", ""] and focused(page) == 2
    page.keyboard.press("Backspace")
    assert values(page) == ["b", "", "", "", ""] and focused(page) == 1
    page.keyboard.type("exhe")
    assert values(page) == list("bexhe") and focused(page) == 4
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    assert focused(page) == 2
    page.keyboard.type("t")  # the box's character is replaced, as a selected letter is
    assert values(page) == list("bethe") and focused(page) == 3
    page.keyboard.press("ArrowRight")
    assert focused(page) == 4
    page.keyboard.press("Backspace")  # a full box: its own character goes, the focus stays
    assert values(page) == list("beth") + [""] and focused(page) == 4
    page.keyboard.type("e")
    send(page)
    assert stored(boxes_server, code) == {item: "bethe"}


def test_a_paste_and_a_suggested_word_spread_over_the_boxes(phone, boxes_server):
    page, code, show = phone
    first = show()
    page.click(f"{BOXES} >> nth=0")
    page.keyboard.type("b")
    # a paste into box 2, with a space in it (a hidden character is never one): spreads from box 2
    page.evaluate("""() => {
      const data = new DataTransfer();
      data.setData('text/plain', 'e the');
      document.activeElement.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    }""")
    assert values(page) == list("bethe") and focused(page) == 4
    send(page)
    second = show()
    # a phone keyboard's suggestion arrives as one input event of several characters, no key pressed
    page.click(f"{BOXES} >> nth=0")
    page.keyboard.insert_text("bethe and more")
    assert values(page) == list("bethe")
    send(page)
    assert stored(boxes_server, code) == {first: "bethe", second: "bethe"}


def test_a_guess_with_an_empty_box_is_not_sent_and_a_redraw_keeps_what_was_typed(phone, boxes_server, screenshots):
    page, code, show = phone
    item = show()
    sent = []
    page.on("request", lambda r: sent.append(r.url) if r.url.endswith("/answers") else None)
    page.click(f"{BOXES} >> nth=0")
    page.keyboard.type("be")
    # the teacher changes something (the leaderboard on): the phone redraws; the letters and the focus stay
    assert httpx.put(f"{boxes_server}/api/sessions/{code}/state", json={"leaderboard": True}, headers=AUTH).status_code == 200
    page.wait_for_selector("#j-leaders:not([hidden]) li")
    assert values(page) == ["b", "e", "", "", ""] and focused(page) == 2
    page.keyboard.press("ArrowRight")
    page.keyboard.type("he")
    assert values(page) == ["b", "e", "", "h", "e"]
    page.click("#j-item .j-send")
    assert re.search(r"Box 3 is empty", page.inner_text("#j-item")), page.inner_text("#j-item")
    assert focused(page) == 2 and page.get_attribute(f"{BOXES} >> nth=2", "aria-invalid") == "true"
    page.screenshot(path=str(screenshots / "class-fill-empty-box-phone-390.png"))
    page.wait_for_timeout(300)
    assert sent == [] and stored(boxes_server, code) == {}
    page.keyboard.type("t")
    assert "is empty" not in page.inner_text("#j-item")
    page.keyboard.press("Enter")  # Enter sends, as the keyboard's "send" key does
    page.wait_for_function("() => /Answer sent/.test(document.querySelector('#j-status').textContent)")
    assert len(sent) == 1 and stored(boxes_server, code) == {item: "bethe"}
