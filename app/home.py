"""What the home page says, read from what exists (issue 51: it said "two models, a GPT and a BERT",
"two masks" and "fifteen questions" long after the app had five families, four masks and more
questions). templates/home.html writes its words from these facts and never a count of its own:

    pages     the page table's navigation (app/pages.py): one card each
    families  the family specs (app/contract/families.py), in their order
    masks     the families the attention page draws, each with its mask
    shows     page key -> the families that page shows ("spans" -> T5)
    trainable the families the Train page offers
    questions the concept check's bank (app/concepts.json)

tests/app/test_home_truths.py changes each of them and reads the page again.
"""
from __future__ import annotations

from . import concepts
from .contract import families as specs
from .pages import NAV

NUMBERS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")


def number(n: int) -> str:
    """A small count in words, as a sentence says it ("four"); larger ones in digits."""
    return NUMBERS[n] if 0 <= n < len(NUMBERS) else str(n)


def names(labels: list[str], last: str = "and") -> str:
    """"GPT", "GPT and BERT", "GPT, BERT and T5" ("" for none)."""
    if len(labels) < 2:
        return "".join(labels)
    return ", ".join(labels[:-1]) + f" {last} " + labels[-1]


def facts() -> dict:
    every = list(specs.SPECS.values())
    shown = {p.key: names([s.label for s in specs.for_page(p.path.strip("/"))]) for p in NAV}
    return {
        "pages": [p for p in NAV if p.path != "/"],
        "families": every,
        "family_names": names([s.label for s in every]),
        "masks": specs.for_page("attention"),
        "shows": shown,
        "trainable": names([s.label for s in every if s.trainable], "or"),
        "questions": len(concepts.bank()),
        "number": number,
    }
