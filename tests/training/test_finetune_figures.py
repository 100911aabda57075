"""The fine-tune figures: the committed result files (models/finetune_results/, written by
`python -m training.finetune.report --run NAME`) are of the shipped BERT, their summaries are what
their own result lines give (seed-level t intervals), the card is exactly what the files build, and
the page's figures are the card's. The docs block itself is compared by tests/app/test_doc_tables.py
(table 'finetune')."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from training.finetune.readout import declared
from training.finetune.report import PLAN, PRIMARY, RESULTS, SET, build_card, fingerprint, read
from training.finetune.stats import METHOD, t_interval
from training.finetune.tasks import CANDIDATES, SHIPPED, TASKS_DIR, load_task

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def card() -> dict:
    return json.loads((REPO / "models" / "finetune.card.json").read_text(encoding="utf-8"))


def files() -> list[Path]:
    return sorted(RESULTS.glob("*.jsonl"))


def test_the_figures_are_of_the_shipped_bert_and_the_card_is_what_the_files_build(card):
    assert files(), "no committed result files: run `python -m training.finetune.report --run names-grid`"
    assert card["bert_onnx_sha256"] == fingerprint(REPO / "models"), (
        "models/bert.onnx changed: rerun `python -m training.finetune.report --stale`")
    for path in files():
        head, _, _ = read(path)
        assert path.stem in PLAN and head["bert_onnx_sha256"] == card["bert_onnx_sha256"], path.name
    assert card == json.loads(json.dumps(build_card("models"))), "rebuild the card: python -m training.finetune.report"
    assert card["interval"] == METHOD and set(card["not_run"]) == set(PLAN) - {p.stem for p in files()}


def test_each_summary_is_what_its_result_lines_give():
    for path in files():
        head, results, summary = read(path)
        assert summary["event"] == "summary" and summary["interval"] == METHOD
        seeds = 10 if path.stem in PRIMARY else 5  # the primary question's cells: 10 seeds (training/tasks/README.md)
        assert "--steps" not in head["command"] and f"--seeds {seeds}" in head["command"], path.name
        for arm, by in summary["results"].items():
            for size, c in by.items():
                scores = [r["score"] for r in results if r["arm"] == arm and str(r["size"]) == size]
                assert c["n"] == len(scores) and c["per_seed"] == scores, (path.name, arm, size)
                if len(scores) > 1:
                    mean, lo, hi = t_interval(scores)
                    assert (c["mean"], c["lo"], c["hi"]) == pytest.approx((mean, max(0.0, lo), min(1.0, hi))), (arm, size)
                    assert len(scores) == seeds


def test_every_shipped_per_character_task_declares_its_readout_and_reports_it_first():
    """A per-character task says how a head reads it, or says "none" out loud: the tasks no head can read
    (issue 42's fixed set: repeats; names declares one since issue 52; questions, the primary question's
    second task) declare it, and their files have no readout row."""
    for name in (*SHIPPED, *CANDIDATES):
        task = load_task(name)
        if task.kind == "token":
            assert declared(task) or task.meta.get("readout") == "none", name
    assert {n for n in CANDIDATES if load_task(n).kind == "token" and not declared(load_task(n))} == {"repeats", "questions"}
    for path in files():
        _, results, summary = read(path)
        if "readout" in summary["results"]:
            assert list(summary["results"])[0] == "readout" and results[0]["arm"] == "readout"
            if load_task(summary["task"]).kind == "token":
                assert results[0]["size"] == 0 and summary["readout"]["text"].startswith("Before any label")


def test_the_page_quotes_the_card(card):
    """Every figure of the page's opening paragraph (data-figure="task.arm.size") is the card's mean, rounded."""
    html = (REPO / "templates" / "finetune.html").read_text(encoding="utf-8")
    quoted = re.findall(r'data-figure="(\w+)\.(\w+)\.(\w+)">([0-9.]+)<', html)
    assert len(quoted) >= 5 and "before any label" in html
    by_task = {}
    for f in card["files"].values():
        for arm, by in f["summary"]["results"].items():
            for size, c in by.items():
                if c.get("mean") is not None:
                    by_task.setdefault((f["task"], arm, size), c["mean"])
    for task, arm, size, shown in quoted:
        assert (task, arm, size) in by_task, (task, arm, size)
        assert float(shown) == round(100 * by_task[(task, arm, size)]), (task, arm, size, shown)


def test_the_pages_ranges_are_the_cards_and_never_findings(card):
    """Issue 52 must 1: every difference the page states besides the primary question is a description with
    its own uncorrected interval: a data-range="task.arm.size" span holds the card's 95 % interval of that
    difference, and the page calls none of them a finding (no "clear", no "corrected" range)."""
    html = (REPO / "templates" / "finetune.html").read_text(encoding="utf-8")
    rows = {(c["task"], c["of"][1], c["size"]): c for c in card["headline"]["comparisons"]}
    ranges = re.findall(r'data-range="(\w+)\.(\w+)\.(\w+)">([^<]+)<', html)
    assert len(ranges) >= 5 and "data-claim" not in html and "data-noclaim" not in html
    for task, other, size, text in ranges:
        c = rows[(task, other, size)]
        assert text == f"{100 * c['lo']:+.1f} to {100 * c['hi']:+.1f}", (task, other, size, text)
    evidence = html[html.index('id="ft-evidence"'):html.index('id="ft-lesson"')]
    assert "Bonferroni" not in html and "widened for all" not in html and "clearly" not in evidence
    assert "not findings" in evidence


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
    assert {load_task(n).kind for n in ("spaces", "punctuation", "typos")} == {"token"}
    assert {e.text for e in plays.train}.isdisjoint(e.text for e in plays.test)
    assert load_task("capitals").kind == "token"
    readme = (TASKS_DIR / "README.md").read_text(encoding="utf-8")
    assert all(f"{name}.jsonl" in readme for name in (*SHIPPED, *CANDIDATES))


def test_the_task_files_are_what_the_build_script_writes():
    from training.build_tasks import all_rows

    assert set(all_rows()) == set(SHIPPED) | set(CANDIDATES)
    for name, rows in all_rows().items():
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows())
        assert (TASKS_DIR / f"{name}.jsonl").read_text(encoding="utf-8") == text


def test_every_task_on_the_page_stands_in_the_group_its_declaration_and_the_card_give(card):
    """Issue 52 must 2: the page's evidence is grouped (data-group="head" | "nohead"); a task stands where its
    readout declaration puts it, and the card's comparisons of that task say the same (head_reads), so no task
    a head reads sits under "Where no head can answer" (capitals did), nor one declared unreadable above it."""
    html = (REPO / "templates" / "finetune.html").read_text(encoding="utf-8")
    groups = re.findall(r'<section data-group="(head|nohead)"(.*?)</section>', html, re.S)
    assert {g for g, _ in groups} == {"head", "nohead"}
    reads = {}
    for c in card["headline"]["comparisons"]:
        reads.setdefault(c["task"], set()).add(c["head_reads"])
    seen = set()
    for group, body in groups:
        tasks = set(re.findall(r'data-(?:figure|range)="(\w+)\.', body))
        assert tasks, group
        for task in tasks:
            assert bool(declared(load_task(task))) == (group == "head"), (task, group)
            assert reads.get(task, {group == "head"}) == {group == "head"}, (task, group, reads.get(task))
            assert task not in seen, f"{task} stands in both groups"
            seen.add(task)
    assert {"names", "capitals"} <= {t for g, b in groups if g == "head"
                                     for t in re.findall(r'data-(?:figure|range)="(\w+)\.', b)}


def test_the_described_differences_are_the_files_and_never_claims(card):
    """The probe against n-grams, and LP-FT against a readout run in a file of its own (names), are described
    with their uncorrected intervals: recomputed from the result lines, and not among the card's comparisons."""
    rows = card["described"]
    probe = {(r["task"], r["size"]): r for r in rows if r["of"] == ["probe", "ngram"]}
    fresh = {t for t in SET if card["files"].get(f"{t}-grid", {}).get("current")}  # a stale grid is described nowhere
    assert {t for t, _ in probe} == fresh
    for (task, size), r in probe.items():
        _, results, _ = read(RESULTS / f"{task}-grid.jsonl")
        by = {(x["arm"], x["seed"]): x["score"] for x in results if str(x["size"]) == size}
        diffs = [by[("probe", k)] - by[("ngram", k)] for k in range(5)]
        assert (r["mean"], r["lo"], r["hi"]) == pytest.approx(t_interval(diffs)), (task, size)
    compared = {(c["task"], tuple(c["of"]), c["size"]) for c in card["headline"]["comparisons"]}
    assert compared and not any((r["task"], tuple(r["of"]), r["size"]) in compared for r in rows)
    assert "Described, not compared" in (REPO / "docs" / "finetune.md").read_text(encoding="utf-8")
