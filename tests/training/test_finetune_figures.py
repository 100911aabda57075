"""The fine-tune figures of docs/finetune.md are the card's (models/finetune.card.json, written by
`python -m training.finetune_report`), and the shipped tasks are what their README says."""
from __future__ import annotations

import json
from pathlib import Path

from training.finetune_report import BAR_POINTS, BAR_SIZE, fingerprint, whole_input_tasks
from training.finetune_tasks import REPLACED, SHIPPED, TASKS_DIR, load_task

REPO = Path(__file__).resolve().parents[2]


def test_the_figures_are_of_the_shipped_bert():
    """The docs block itself is compared by tests/app/test_doc_tables.py (table 'finetune')."""
    card = json.loads((REPO / "models" / "finetune.card.json").read_text(encoding="utf-8"))
    assert card["bert_onnx_sha256"] == fingerprint(REPO / "models"), (
        "models/bert.onnx changed: run `python -m training.finetune_report` (card and docs/finetune.md block)")
    for entry in card["tasks"].values():
        assert entry["command"].startswith("python -m training finetune --model models ")
        assert set(entry["summary"]["results"]) == {"full", "probe", "scratch"}


def test_the_claim_holds_on_each_shipped_whole_input_task():
    """Issue 19: at 32 labelled examples the full fine-tune from the shipped BERT beats from scratch
    by >= 10 points of held-out accuracy, the 95 % interval of the paired difference above 0."""
    card = json.loads((REPO / "models" / "finetune.card.json").read_text(encoding="utf-8"))
    assert set(card["tasks"]) == set(whole_input_tasks()) == {"spelling", "backwards"}
    for task, entry in card["tasks"].items():
        d = entry["summary"]["difference"]["by_size"][BAR_SIZE]
        assert d["n"] >= 3 and d["seeds"] == list(range(card["seeds"])), task
        assert 100 * d["mean"] >= BAR_POINTS and d["lo"] > 0, (task, d)
        assert entry["claim"]["met"] is True
    for task, entry in card["replaced"].items():  # measured and reported, not claimed
        assert task in REPLACED and not entry["claim"]["met"]


def test_shipped_tasks_are_as_described():
    vocab = set(json.loads((REPO / "models" / "vocab.json").read_text(encoding="utf-8"))["chars"])
    spelling = load_task("spelling")
    assert len(spelling.train) + len(spelling.test) >= 300 and len(spelling.test) >= 100
    assert {c for e in spelling.train + spelling.test for c in e.text} <= vocab
    sentences = {e.text for e in load_task("sentiment").train + load_task("sentiment").test}
    right = [e for e in spelling.train + spelling.test if e.label == "spelt right"]
    jumbled = [e for e in spelling.train + spelling.test if e.label == "jumbled"]
    assert len(right) == len(jumbled) and all(e.text in sentences for e in right)
    assert not any(e.text in sentences for e in jumbled)
    backwards = load_task("backwards")
    assert len(backwards.test) >= 100 and {c for e in backwards.train + backwards.test for c in e.text} <= vocab
    assert {e.text for e in backwards.train}.isdisjoint(e.text for e in backwards.test)
    plays = load_task("plays")
    assert {e.text for e in plays.train}.isdisjoint(e.text for e in plays.test)
    assert load_task("capitals").kind == "token"
    readme = (TASKS_DIR / "README.md").read_text(encoding="utf-8")
    assert all(f"{name}.jsonl" in readme for name in (*SHIPPED, *REPLACED))


def test_the_task_files_are_what_the_build_script_writes():
    from training.build_tasks import TASK_ROWS

    assert set(TASK_ROWS) == set(SHIPPED) | set(REPLACED)
    for name, rows in TASK_ROWS.items():
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows())
        assert (TASKS_DIR / f"{name}.jsonl").read_text(encoding="utf-8") == text
