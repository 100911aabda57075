"""The documents' tables of figures (docs/*.md) are printed by `python -m benchmarks.tables` from the
models with the app's own code: each block between `<!-- table:NAME -->` markers must equal a fresh
computation, and the recovery figures must be what `POST /api/objectives/recovery` answers for the
same settings. The tool is run as a command (tests do not import benchmarks/)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from app.config import REPO, Settings
from app.main import create_app

SHIPPED = REPO / "models"
DOCS = REPO / "docs"
# Where each table lives; `python -m benchmarks.tables` with no name prints every one of them.
HOMES = {"recovery": "models.md", "models": "models.md", "inspection": "models.md", "masking": "models.md",
         "finetune": "finetune.md", "http": "serving.md", "oldnew": "models.md", "presetcheck": "training.md",
         "spans": "models.md"}
BLOCK = r"<!-- table:{} -->\n(.*?)\n<!-- /table -->"


def tables_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchmarks.tables", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=300)


def blocks(text: str, name: str) -> list[str]:
    return re.findall(BLOCK.format(re.escape(name)), text, re.S)


@pytest.fixture(scope="module")
def fresh() -> str:
    done = tables_cli()
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOMES))
def test_doc_block_equals_a_fresh_computation(name, fresh):
    printed = blocks(fresh, name)
    assert len(printed) == 1, f"`python -m benchmarks.tables` printed no '{name}' table"
    found = blocks((DOCS / HOMES[name]).read_text(encoding="utf-8"), name)
    assert len(found) == 1, f"docs/{HOMES[name]} must hold the '{name}' block once"
    assert found[0] == printed[0], (
        f"docs/{HOMES[name]}'s '{name}' table is stale: run `python -m benchmarks.tables --write {name}`")


@pytest.mark.slow
def test_every_printed_table_has_a_home(fresh):
    assert set(re.findall(r"<!-- table:(\w+) -->", fresh)) == set(HOMES)


def pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def test_recovery_table_is_what_the_api_answers():
    """The table's settings are in its own sentence: 200 draws at 15 %, seed 0 (spans of mean 3)."""
    doc = blocks((DOCS / "models.md").read_text(encoding="utf-8"), "recovery")[0]
    assert "200 draws at 15 %, seed 0" in doc
    rows = {line.split(" | ")[0].strip("| "): line for line in doc.splitlines() if line.startswith("| ")}
    with TestClient(create_app(Settings(models_dir=SHIPPED))) as client:
        for scheme, label in (("char", "per character (as trained)"), ("span", "spans (mean 3)")):
            api = client.post("/api/objectives/recovery", json={"scheme": scheme, "mask_rate": 0.15,
                                                                 "mean_span": 3.0, "draws": 200, "seed": 0})
            assert api.status_code == 200
            body = api.json()
            by = body["by_action"]
            cells = [pct(body["accuracy"]), pct(by["mask"]["accuracy"]), pct(by["random"]["accuracy"]),
                     pct(by["unchanged"]["accuracy"]), f"{body['positions']:,}"]
            assert rows[label] == f"| {label} | " + " | ".join(cells) + " |"


def test_write_puts_each_block_back_in_its_document(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    page = docs / "models.md"
    real = page.read_text(encoding="utf-8")
    stale = re.sub(BLOCK.format("inspection"), "<!-- table:inspection -->\nold\nlines\n<!-- /table -->", real,
                   flags=re.S)
    assert stale != real
    page.write_text(stale, encoding="utf-8")
    done = tables_cli("--write", "inspection", "models", "--docs", str(docs))
    assert done.returncode == 0, done.stderr
    assert page.read_text(encoding="utf-8") == real          # the block is back, the rest untouched
    assert (docs / "serving.md").read_text(encoding="utf-8") == (DOCS / "serving.md").read_text(encoding="utf-8")


def test_write_names_a_missing_block_and_writes_nothing(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    before = (docs / "models.md").read_text(encoding="utf-8")
    (docs / "serving.md").write_text("# Serving\n\nno table here\n", encoding="utf-8")
    done = tables_cli("--write", "inspection", "http", "--docs", str(docs))
    assert done.returncode == 2 and "serving.md has 0 '<!-- table:http -->' blocks" in done.stderr
    assert "Traceback" not in done.stderr
    assert (docs / "models.md").read_text(encoding="utf-8") == before   # checked before anything was written


def test_cli_names_an_unknown_table():
    done = tables_cli("nope")
    assert done.returncode == 2 and "unknown table 'nope'" in done.stderr


def test_the_masking_sentences_follow_the_stored_measurement():
    """docs/models.md and /objectives say, in words, what the masking table shows: a span-trained BERT
    is not better at spans than the per-character one; the whole-word-trained one is the best at whole
    words and the worst per character. If a new measurement says otherwise, the words must change."""
    rows = json.loads((REPO / "benchmarks" / "masking_recovery.json").read_text())["rows"]
    rec = {name: row["recovery"] for name, row in rows.items()}
    assert rec["span"]["span"] <= rec["char"]["span"]
    assert rec["word"]["word"] == max(r["word"] for r in rec.values())
    assert rec["word"]["char"] == min(r["char"] for r in rec.values())
    doc = (DOCS / "models.md").read_text(encoding="utf-8")
    assert "training on spans did **not** make BERT better at recovering" in doc
    page = (REPO / "templates" / "objectives.html").read_text(encoding="utf-8")
    assert "the span-trained one was <em>not</em> better at spans" in page
