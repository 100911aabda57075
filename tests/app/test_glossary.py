"""The glossary's server side (app/glossary.py): every term a template names exists, with a plain
one-line definition, and renders as a button the glossary module opens."""
from __future__ import annotations

import re

import pytest

from app import glossary
from app.config import REPO

TEMPLATES = REPO / "templates"


def test_every_entry_is_one_plain_line():
    for key, entry in glossary.terms().items():
        d = entry["definition"]
        assert "\n" not in d and 20 <= len(d) <= 160, key
        for w in entry.get("words", []):
            assert re.search(w, entry["label"], re.I), (key, w)  # a term's own label counts as using it


def test_templates_name_only_known_terms():
    used = {m.group(1) for path in TEMPLATES.glob("*.html")
            for m in re.finditer(r"""term\(\s*["']([^"']+)["']""", path.read_text(encoding="utf-8"))}
    assert used and used <= set(glossary.terms()), used - set(glossary.terms())


def test_a_term_renders_as_an_escaped_button():
    html = str(glossary.term("entropy", "Entropy <b>"))
    assert html.startswith('<button type="button" class="term" data-term="entropy" aria-expanded="false"')
    assert "Entropy &lt;b&gt;</button>" in html and glossary.terms()["entropy"]["definition"] in html
    with pytest.raises(KeyError):
        glossary.term("no-such-term")
