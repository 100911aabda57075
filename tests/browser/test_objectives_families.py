"""The Objectives page, part 1, for the other two families (issue 41): T5's span corruption and PLM's
permuted order, drawn in the browser from part 1's sentence and seed (static/pages/objectives_more.js),
beside GPT's and BERT's cards. What carries loss is checked against the recipes themselves: T5 hides
15 % of the characters in spans of 3 on average (training/t5.py span_counts) and writes each span after
its sentinel, then [SEP]; PLM guesses the last 15 % of the order shuffled(n, seed) (the server's random
stream, app/contract/spec.py). Desktop, phone and projector sizes: nothing scrolls sideways."""
from __future__ import annotations

from urllib.parse import quote_plus

import pytest

from app.contract.spec import uniform

pytestmark = pytest.mark.browser

TEXT = "war and the sword, a ship upon the sea, the ghost at night!"  # in the tiny models' vocabulary
SEED = 3

READ = """() => {
  const toks = (sel) => [...document.querySelectorAll(sel + ' .tok')].map((t) => ({
    kind: t.dataset.kind || null, char: t.dataset.char ?? null, pos: t.dataset.pos === undefined ? null : Number(t.dataset.pos),
    rank: t.dataset.rank === undefined ? null : Number(t.dataset.rank), span: t.dataset.span === undefined ? null : Number(t.dataset.span),
    shown: t.firstElementChild.textContent, note: t.lastElementChild.textContent, loss: t.classList.contains('carries-loss') }));
  return { read: toks('#o-t5-read'), write: toks('#o-t5-write'), plm: toks('#o-plm-toks'),
           t5loss: document.querySelector('#o-t5-loss').textContent, plmloss: document.querySelector('#o-plm-loss').textContent };
}"""


def shuffled(n: int, seed: int) -> list[int]:
    """The server's order (app/contract/spec.py shuffled): Fisher-Yates from the end on the random stream."""
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        j = int(uniform(seed, i) * (i + 1))
        order[i], order[j] = order[j], order[i]
    return order


def span_counts(n: int) -> tuple[int, int]:
    """training/t5.py span_counts (NOISE 0.15, MEAN_SPAN 3, 32 sentinels), without torch."""
    hidden = max(1, round(n * 0.15))
    return hidden, max(1, min(round(hidden / 3), hidden, n - hidden, 32))


def predicted_count(n: int) -> int:
    return max(1, round(n * 0.15))  # app/tasks/plm.py predicted_count


def open_page(page_factory, text: str = TEXT, seed: int = SEED, width: int = 1280, height: int = 900, extra: str = ""):
    page, rec = page_factory(width, height)
    assert page.goto(f"/objectives?text={quote_plus(text)}&seed={seed}{extra}").ok
    page.wait_for_selector("#o-t5-write .tok", state="attached")
    page.wait_for_selector("#o-plm-toks .tok", state="attached")
    return page, rec


def spans_of(read: list[dict], n: int) -> list[list[int]]:
    """The hidden positions behind each sentinel of T5's input, from the characters it still shows."""
    out, at = [], 0
    for t in read:
        if t["kind"] == "char":
            assert t["pos"] >= at and (out or t["pos"] == at), read  # nothing hidden before the first sentinel
            if t["pos"] > at:
                out[-1] += list(range(at, t["pos"]))
            at = t["pos"] + 1
        else:
            out.append([])
    if out:
        out[-1] += list(range(at, n))
    return out


def check_t5(c: dict, text: str) -> list[list[int]]:
    n = len(text)
    read, write = c["read"], c["write"]
    hidden, count = span_counts(n)
    # what T5 reads carries no loss: the kept characters, in place, and one sentinel per span
    assert not any(t["loss"] for t in read)
    assert [t["char"] for t in read if t["kind"] == "char"] == [text[t["pos"]] for t in read if t["kind"] == "char"]
    sentinels = [t for t in read if t["kind"] == "sentinel"]
    assert [t["shown"] for t in sentinels] == [f"⟨{k}⟩" for k in range(count)]
    spans = spans_of(read, n)
    assert sum(len(s) for s in spans) == hidden and all(spans), spans  # ~15 %, every span at least one character
    assert all(b[0] - a[-1] > 1 for a, b in zip(spans, spans[1:]))  # a kept character between two spans
    # what T5 writes, every token with loss: ⟨0⟩ span 0 ⟨1⟩ span 1 … [SEP]
    assert all(t["loss"] for t in write)
    expected = [x for k, s in enumerate(spans) for x in [("sentinel", f"⟨{k}⟩")] + [("char", text[p]) for p in s]] + [("sep", "[SEP]")]
    assert [(t["kind"], t["char"] if t["kind"] == "char" else t["shown"]) for t in write] == expected
    assert [t["pos"] for t in write if t["kind"] == "char"] == [p for s in spans for p in s]
    assert sum(t["kind"] == "sentinel" for t in write) == len(sentinels) == count
    assert f"mean over the {len(write)} written tokens of −log p(token | the line with its placeholders" in c["t5loss"]
    return spans


def check_plm(c: dict, text: str, seed: int) -> list[int]:
    n, k = len(text), predicted_count(len(text))
    plm = c["plm"]
    assert [t["pos"] for t in plm] == list(range(n)) and "".join(t["char"] for t in plm) == text  # the text in place
    order = shuffled(n, seed)
    assert [t["rank"] for t in plm] == [order.index(i) for i in range(n)]  # each character's place in the order
    assert [t["note"] for t in plm] == [f"#{order.index(i) + 1}" for i in range(n)]
    lossy = [t for t in plm if t["loss"]]
    assert len(lossy) == k
    assert sorted(t["rank"] for t in lossy) == list(range(n - k, n))  # the last ones of the order shown
    assert {t["pos"] for t in lossy} == set(order[n - k:])
    assert f"({k} of {n} characters)" in c["plmloss"] and "the characters earlier in the order" in c["plmloss"]
    return order


def test_t5_and_plm_cards_show_what_carries_loss_for_the_seed(page_factory):
    page, rec = open_page(page_factory)
    c = page.evaluate(READ)
    spans = check_t5(c, TEXT)
    assert len(spans) == 3  # 59 characters: 9 hidden in 3 spans
    order = check_plm(c, TEXT, SEED)
    # the same seed in another browser: the same picture
    again, _ = open_page(page_factory)
    assert again.evaluate(READ) == c
    # a new seed draws again (the page's "New draw" too)
    page.fill("#o-seed", str(SEED + 1))
    page.dispatch_event("#o-seed", "change")
    page.wait_for_function("() => new URLSearchParams(location.search).get('seed') === '%d'" % (SEED + 1))
    c2 = page.evaluate(READ)
    assert check_t5(c2, TEXT) != spans and check_plm(c2, TEXT, SEED + 1) != order
    page.click("h1")
    page.keyboard.press("n")
    page.wait_for_function("() => new URLSearchParams(location.search).get('seed') === '%d'" % (SEED + 2))
    check_t5(page.evaluate(READ), TEXT)
    check_plm(page.evaluate(READ), TEXT, SEED + 2)
    # a new sentence redraws both cards at once (no server needed)
    page.fill("#o-text", "the king and the crown")
    page.wait_for_function("() => document.querySelectorAll('#o-plm-toks .tok').length === 22")
    c3 = page.evaluate(READ)
    assert len(check_t5(c3, "the king and the crown")) == 1
    check_plm(c3, "the king and the crown", SEED + 2)
    rec.assert_clean(page)


@pytest.mark.parametrize("width, height, extra", [(1280, 720, ""), (390, 844, ""), (1280, 720, "&projector=1")])
def test_the_four_cards_fit_without_sideways_scroll(page_factory, width, height, extra):
    page, rec = open_page(page_factory, width=width, height=height, extra=extra)
    page.wait_for_load_state("networkidle")
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"the page scrolls sideways by {overflow}px at {width}px{extra}"
    boxes = [page.locator(sel).bounding_box() for sel in ("#o-gpt-toks", "#o-bert-toks", "#o-t5", "#o-plm")]
    assert all(b and b["x"] >= 0 and b["x"] + b["width"] <= width for b in boxes), boxes
    gpt, bert, t5, plm = boxes
    if width >= 1280:  # two to a row: GPT and BERT, then T5 and PLM
        assert bert["x"] > gpt["x"] + gpt["width"] and plm["x"] > t5["x"] + t5["width"] and t5["y"] > gpt["y"]
    else:  # one to a row
        assert abs(t5["x"] - plm["x"]) < 1 and plm["y"] > t5["y"] + t5["height"]
    if extra:  # the projector: part 1 is the slide shown, whole, and nothing cut on the right
        assert page.locator("#o-loss-h").is_visible() and page.locator("#o-plm-toks").is_visible()
    rec.assert_clean(page)
