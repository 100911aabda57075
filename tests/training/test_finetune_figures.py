"""The README's fine-tune figures are the card's (models/finetune.card.json, written by
`python -m training.finetune_report`), and the shipped tasks are what their README says."""
from __future__ import annotations

import json
from pathlib import Path

from training.finetune_report import fingerprint
from training.finetune_tasks import SHIPPED, TASKS_DIR, load_task

REPO = Path(__file__).resolve().parents[2]


def test_the_figures_are_of_the_shipped_bert():
    """The README block itself is compared by tests/app/test_readme_tables.py (table 'finetune')."""
    card = json.loads((REPO / "models" / "finetune.card.json").read_text(encoding="utf-8"))
    assert card["bert_onnx_sha256"] == fingerprint(REPO / "models"), (
        "models/bert.onnx changed: run `python -m training.finetune_report && python -m benchmarks.tables --write finetune`")
    for entry in card["tasks"].values():
        assert entry["command"].startswith("python -m training finetune --model models ")
        assert set(entry["summary"]["results"]) == {"full", "probe", "scratch"}


def test_shipped_tasks_are_as_described():
    vocab = json.loads((REPO / "models" / "vocab.json").read_text(encoding="utf-8"))["chars"]
    sentiment = load_task("sentiment")
    assert len(sentiment.train) + len(sentiment.test) >= 300 and len(sentiment.test) >= 100
    assert {c for e in sentiment.train + sentiment.test for c in e.text} <= set(vocab)
    plays = load_task("plays")
    assert {e.text for e in plays.train}.isdisjoint(e.text for e in plays.test)
    assert load_task("capitals").kind == "token"
    readme = (TASKS_DIR / "README.md").read_text(encoding="utf-8")
    assert all(f"{name}.jsonl" in readme for name in SHIPPED)


def test_the_task_files_are_what_the_build_script_writes():
    from training.build_tasks import capitals_rows, plays_rows, sentiment_rows

    for name, rows in (("sentiment", sentiment_rows()), ("plays", plays_rows()), ("capitals", capitals_rows())):
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        assert (TASKS_DIR / f"{name}.jsonl").read_text(encoding="utf-8") == text
