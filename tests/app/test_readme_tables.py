"""The README's tables of figures are printed by `python -m benchmarks.tables` from the models with
the app's own code: each block between `<!-- table:NAME -->` markers must equal a fresh computation,
and the recovery figures must be what `POST /api/objectives/recovery` answers for the same settings."""
from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.config import REPO, Settings
from app.main import create_app
from benchmarks import tables

SHIPPED = REPO / "models"


@pytest.mark.parametrize("name", sorted(tables.TABLES))
def test_readme_block_equals_a_fresh_computation(name):
    fresh = tables.TABLES[name](SHIPPED)
    assert tables.readme_block(name) == fresh, (
        f"README.md's '{name}' table is stale: run `python -m benchmarks.tables --write {name}`")


def test_recovery_table_is_what_the_api_answers():
    rows = dict((label, out) for label, out in tables.recovery_rows(SHIPPED))
    with TestClient(create_app(Settings(models_dir=SHIPPED))) as client:
        for scheme, label in tables.SCHEME_ROWS[:2]:
            api = client.post("/api/objectives/recovery", json={"scheme": scheme, **tables.RECOVERY})
            assert api.status_code == 200
            body = api.json()
            assert body["by_action"] == rows[label]["by_action"] and body["accuracy"] == rows[label]["accuracy"]
    readme = tables.readme_block("recovery")
    per_char = rows[tables.SCHEME_ROWS[0][1]]
    assert f"| {tables.pct(per_char['by_action']['random']['accuracy'])} |" in readme


def test_blocks_are_found_once_and_rewritten_in_place():
    text = "intro\n<!-- table:models -->\nold\nlines\n<!-- /table -->\nafter\n"
    assert tables.readme_block("models", text) == "old\nlines"
    with pytest.raises(LookupError):
        tables.readme_block("recovery", text)
    assert tables.replace_block("models", "new", text) == "intro\n<!-- table:models -->\nnew\n<!-- /table -->\nafter\n"


def test_cli_names_an_unknown_table(capsys):
    with pytest.raises(SystemExit) as exit_:
        tables.main(["nope"])
    assert exit_.value.code == 2 and "unknown table 'nope'" in capsys.readouterr().err


def test_the_masking_sentences_follow_the_stored_measurement():
    """README and /objectives say, in words, what the masking table shows: a span-trained BERT is
    not better at spans than the per-character one; the whole-word-trained one is the best at whole
    words and the worst per character. If a new measurement says otherwise, the words must change."""
    import json

    rows = json.loads((REPO / "benchmarks" / "masking_recovery.json").read_text())["rows"]
    rec = {name: row["recovery"] for name, row in rows.items()}
    assert rec["span"]["span"] <= rec["char"]["span"]
    assert rec["word"]["word"] == max(r["word"] for r in rec.values())
    assert rec["word"]["char"] == min(r["char"] for r in rec.values())
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "training on spans did **not** make BERT better at recovering" in readme
    page = (REPO / "templates" / "objectives.html").read_text(encoding="utf-8")
    assert "the span-trained one was <em>not</em> better at spans" in page
