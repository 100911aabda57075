"""The fine-tune page's readout chooser (static/pages/finetune_readout.js with finetune_handoff.js's
labelCounts), run by node without a browser: BERT's next-sentence readout ({"nsp": LABEL}, issue 52) is
offered either way round only for a whole-input file whose every text is two lines; GPT's likelihood stays
offered for any two-label whole-input file."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from app.config import REPO

SCRIPT = """
const h = await import(process.argv[1] + "/static/pages/finetune_handoff.js");
const r = await import(process.argv[1] + "/static/pages/finetune_readout.js");
const info = h.labelCounts(process.argv[2]);
console.log(JSON.stringify({pairs: info.pairs, values: r.readoutChoices(info).map((c) => c.value), hint: r.readoutHint(info)}));
"""


def choices(text: str) -> dict:
    if not shutil.which("node"):
        pytest.skip("node is not installed")
    out = subprocess.run(["node", "--input-type=module", "-e", SCRIPT, str(REPO), text], capture_output=True, text=True,
                         timeout=60, check=True)
    return json.loads(out.stdout)


def lines(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_two_line_texts_are_offered_the_next_sentence_readout_either_way():
    got = choices(lines([{"text": "to be\nor not", "label": "follows"}, {"text": "a horse\nblue rain", "label": "elsewhere"}]))
    assert got["pairs"] is True
    assert got["values"] == ["", '{"gpt":"follows"}', '{"gpt":"elsewhere"}', '{"nsp":"follows"}', '{"nsp":"elsewhere"}']
    assert "second line carries on" in got["hint"]


def test_one_text_without_a_line_break_or_per_character_tags_get_no_next_sentence_readout():
    mixed = choices(lines([{"text": "to be\nor not", "label": "follows"}, {"text": "one line", "label": "elsewhere"}]))
    assert mixed["pairs"] is False and not any("nsp" in v for v in mixed["values"]) and len(mixed["values"]) == 3
    assert "second line" not in mixed["hint"]
    tags = choices(lines([{"text": "a\nb", "tags": "010"}, {"text": "c\nd", "tags": "100"}]))
    assert tags["pairs"] is False and not any("nsp" in v or "gpt" in v for v in tags["values"])
