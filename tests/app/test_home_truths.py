"""The home page is built from what exists (issue 51 must 5). The rehearsal found it saying "two tiny
models, a GPT and a BERT", "fifteen questions" and two masks, with no card for /spans and no way into a
class. Here: every page of the navigation has a card with words, every family is named with what it
learns, the mask card names each mask the attention page draws, the concept card counts the bank, and
a "Join a class" link leads to /join. Then the data changes (a family, a question, a page) and the page
must follow it. Last, every sentence on any page that counts models, masks, families or questions must
count right."""
from __future__ import annotations

import re
from html import unescape
from pathlib import Path

from app import concepts, home
from app.contract.families import SPECS, FamilySpec, for_page
from app.pages import NAV, Page
from tests.conftest import REPO

CARD = re.compile(r'<li class="card" data-path="([^"]+)">(.*?)</li>', re.S)


def text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def cards(html: str) -> dict[str, str]:
    """path -> the words of its card (its link's title and its sentence), in the page's order."""
    return {path: text(body) for path, body in CARD.findall(html)}


def wordless(html: str) -> list[str]:
    """The pages whose card has a title but no sentence saying what a student does there."""
    return [path for path, body in CARD.findall(html) if not re.search(r"<p>\s*\S", body)]


def lead(html: str) -> str:
    """The words above the cards: the join line, the lead and the family list."""
    return text(html[html.index('<p class="join-line">'):html.index('<h2 id="h-pages-h">')])


def test_every_page_of_the_navigation_has_a_card_that_says_what_it_is(client):
    html = client.get("/").text
    found = cards(html)
    assert list(found) == [p.path for p in NAV if p.path != "/"]  # /spans too, in the table's order
    assert wordless(html) == []
    for page in NAV[1:]:
        assert f'<a href="{page.path}">' in html, page.path


def test_a_student_who_typed_only_the_address_finds_the_way_into_a_class(client):
    html = client.get("/").text
    assert re.search(r'<a class="btn" href="/join">Join a class</a>', html)
    assert html.index('href="/join"') < html.index('class="applet-list"')  # before the cards: the first thing there


def test_every_family_is_named_with_what_it_learns(client):
    words = lead(client.get("/").text)
    assert f"{home.number(len(SPECS))} kinds of model" in words
    for spec in SPECS.values():
        assert f"{spec.label} learns to {spec.objective}." in words
    assert "Two tiny" not in words and "a GPT and a BERT" not in words


def test_the_mask_card_names_each_mask_the_attention_page_draws(client):
    card = cards(client.get("/").text)["/attention"]
    masks = for_page("attention")
    assert f"The {home.number(len(masks))} attention masks" in card
    assert ", ".join(f"{s.label} {s.attention}" for s in masks) in card


def test_the_concept_card_counts_the_bank(client):
    card = cards(client.get("/").text)["/concepts"]
    assert f"{len(concepts.bank())} short questions" in card
    assert "Fifteen" not in card


def test_the_words_follow_a_new_family_a_new_question_and_a_new_page(client, monkeypatch):
    before = client.get("/").text
    gpt = SPECS["gpt"]
    monkeypatch.setitem(SPECS, "xl", FamilySpec(
        "xl", "XLM", "guess the next character in two languages", "causal", inputs=gpt.inputs, outputs=gpt.outputs,
        task="app.tasks.gpt:GPT", trainer="training.families.gpt:FAMILY", optional=True, pages=("attention", "generate")))
    bank = concepts.bank()
    monkeypatch.setattr(concepts, "bank", lambda: bank + [bank[0]])
    monkeypatch.setattr(home, "NAV", NAV + (Page("/new", "new", "A new page", nav="New"),))
    html = client.get("/").text
    assert html != before
    assert f"{home.number(len(SPECS))} kinds of model" in lead(html)
    assert "XLM learns to guess the next character in two languages." in lead(html)
    assert f"The {home.number(len(for_page('attention')))} attention masks" in cards(html)["/attention"]
    assert "XLM causal" in cards(html)["/attention"] and "GPT and XLM" in cards(html)["/generate"]
    assert f"{len(bank) + 1} short questions" in cards(html)["/concepts"]
    assert wordless(html) == ["/new"]  # a page with a card but no words yet: the first test fails for it


# ---------------------------------------------------------------- every page's counting sentences
# "one mask" (T5's), "no question": not a count of them all
NUMBER = {w: n for n, w in enumerate(home.NUMBERS) if n >= 2} | {"fifteen": 15, "nineteen": 19, "twenty": 20}
COUNTED = re.compile(r"\b(" + "|".join(NUMBER) + r"|\d+)\s+(?:(?:tiny|small|short|little|character-level|language|"
                     r"attention|pretrained|concept)\s+){0,3}(models?|masks?|famil(?:y|ies)|questions?)\b", re.I)
COMMENTS = re.compile(r"/\*.*?\*/|(?<![:\"'])//[^\n]*|\{#.*?#\}", re.S)  # JS, CSS and Jinja comments: not page text


def truth(noun: str) -> int:
    if noun.startswith("mask"):
        return len(for_page("attention"))
    if noun.startswith("question"):
        return len(concepts.bank())
    return len(SPECS)


def page_sources() -> list[Path]:
    return sorted([*(REPO / "templates").glob("*.html"), *(REPO / "static" / "pages").glob("*.js"),
                   *(REPO / "static" / "families").glob("*.js"), *(REPO / "static" / "lib").glob("*.js"),
                   REPO / "app" / "static_notes.py"])


def counting_sentences(source: str) -> list[tuple[int, str]]:
    """(the count, the noun) of every "four masks", "15 questions", "two tiny models" in a page's text."""
    said = COMMENTS.sub(" ", source)
    return [(NUMBER.get(m[1].lower()) if not m[1].isdigit() else int(m[1]), m[2].lower()) for m in COUNTED.finditer(said)]


def test_the_scan_finds_the_old_home_pages_counts():
    old = ("Two tiny character-level language models, a GPT and a BERT ... Fifteen questions ... four masks "
           "/* two masks in a comment */")
    assert counting_sentences(old) == [(2, "models"), (15, "questions"), (4, "masks")]


def test_every_sentence_that_counts_models_masks_or_questions_counts_right():
    wrong = [(path.relative_to(REPO).as_posix(), n, noun) for path in page_sources()
             for n, noun in counting_sentences(path.read_text(encoding="utf-8")) if n != truth(noun)]
    assert not wrong, f"counts that no longer match the data (derive them, or say it without a count): {wrong}"
    gpt_and_bert = [path.name for path in page_sources()
                    if "a GPT and a BERT" in COMMENTS.sub(" ", path.read_text(encoding="utf-8"))]
    assert not gpt_and_bert, f"pages that still speak of just a GPT and a BERT: {gpt_and_bert}"
