"""The student pages' glossary (app/glossary.json): one plain line per technical term.

Templates write `{{ term("logits") }}` (or `{{ term("logits", "logit") }}` for another wording): a
button that shows the definition where the word stands (static/lib/glossary.js: a tap, a click,
Enter or Space; Escape closes). base.html carries every definition once, in a hidden list that the
page modules read for the terms they draw themselves. An unknown key fails the page's rendering, so
a term never appears without its definition."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from markupsafe import Markup, escape

FILE = Path(__file__).resolve().parent / "glossary.json"


@lru_cache(maxsize=1)
def terms() -> dict[str, dict]:
    found = json.loads(FILE.read_text(encoding="utf-8"))["terms"]
    for key, entry in found.items():
        if not (entry.get("label") and entry.get("definition")):
            raise ValueError(f"glossary.json: term {key!r} needs a label and a definition")
    return found


def term(key: str, text: str | None = None) -> Markup:
    """The word as a glossary button; its definition is shown beside it when pressed."""
    entry = terms().get(key)
    if entry is None:
        raise KeyError(f"{key!r} is not in app/glossary.json")
    return Markup('<button type="button" class="term" data-term="{}" aria-expanded="false" title="{}">{}</button>').format(
        key, entry["definition"], escape(text or entry["label"]))


def install(env) -> None:
    """Make `term(...)` and the glossary itself available to every template."""
    env.globals["term"] = term
    env.globals["glossary"] = terms
