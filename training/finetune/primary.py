"""The lab's one primary question, answered from its result files (issue 52; the plan, written down
before the runs: training/tasks/README.md, "The lab's one primary question").

    LP-FT minus class-balanced character n-grams, F1 points of the rarer tag, at 128 labelled
    examples, on each task no pretrained head reads (repeats, questions), paired by seed.

Per task: the per-seed differences' paired t test (two-sided), Holm over the tasks (the smaller p at
5 % / 2, the next at 5 %), the t interval at each task's Holm level, and beside it a two-level
bootstrap interval (seeds, then test passages, resampled: stats.two_level), whose standard error
gives the smallest difference the design could see with 80 % power at that level. The answer is
said the same way whichever way it comes out (`answer_text`). Every other comparison of the lab is
description.
"""
from __future__ import annotations

import numpy as np

from .stats import holm, paired_t, score, t_interval, two_level

SIZE = "128"
ALPHA = 0.05
POWER = 0.8
WORTH = 0.05  # the smallest difference worth teaching: 5 points of F1


def seed_units(results: list[dict], arm: str) -> dict[int, np.ndarray]:
    """{seed: (n_test, 5) counts} of one arm at SIZE (result lines written with --keep-units)."""
    return {r["seed"]: np.asarray(r["units"], dtype=np.int64) for r in results
            if r["arm"] == arm and str(r["size"]) == SIZE and "units" in r}


def smallest_seen(se: float | None, level: float, df: int) -> float | None:
    """The difference a two-sided test at `level` would find with POWER, given a standard error se."""
    from scipy.stats import t

    if se is None or df < 1:
        return None
    return float((t.ppf(1 - (1 - level) / 2, df) + t.ppf(POWER, df)) * se)


def task_cell(task: str, results: list[dict], metric: str) -> dict:
    full, ngram = seed_units(results, "full"), seed_units(results, "ngram")
    seeds = sorted(set(full) & set(ngram))
    per_seed = [score(full[s], metric) - score(ngram[s], metric) for s in seeds]
    mean = float(np.mean(per_seed)) if per_seed else None
    return {"task": task, "size": SIZE, "seeds": seeds, "per_seed": per_seed, "mean": mean,
            "full": float(np.mean([score(full[s], metric) for s in seeds])) if seeds else None,
            "ngram": float(np.mean([score(ngram[s], metric) for s in seeds])) if seeds else None,
            "n_test": int(next(iter(full.values())).shape[0]) if full else 0,
            "test": paired_t(per_seed), "bootstrap": two_level({s: full[s] for s in seeds}, {s: ngram[s] for s in seeds},
                                                               metric)}


def answer(by_task: dict[str, list[dict]], metric: str = "f1") -> dict:
    """{"cells": [...], "text", "worth", "alpha"} over the primary files' result lines, by task."""
    cells = [task_cell(task, results, metric) for task, results in by_task.items()]
    steps = holm({c["task"]: c["test"]["p"] for c in cells}, ALPHA)
    for c in cells:
        c["holm"] = steps[c["task"]]
        if len(c["per_seed"]) > 1:
            _, lo, hi = t_interval(c["per_seed"], c["holm"]["level"])
            c["t_interval"] = {"lo": lo, "hi": hi, "level": c["holm"]["level"]}
        else:
            c["t_interval"] = {"lo": None, "hi": None, "level": c["holm"]["level"]}
        c["smallest_seen"] = smallest_seen(c["bootstrap"]["se"], c["holm"]["level"], len(c["per_seed"]) - 1)
    return {"cells": cells, "alpha": ALPHA, "worth": WORTH, "power": POWER, "text": answer_text(cells)}


def _pts(x: float) -> str:
    return f"{100 * x:.1f}"


def cell_text(c: dict) -> str:
    if c["mean"] is None or c["t_interval"]["lo"] is None:
        return f"{c['task']}: not run yet (10 seeds of LP-FT and n-grams at {SIZE})."
    ti, b = c["t_interval"], c["bootstrap"]
    intervals = (f"Holm-corrected {100 * ti['level']:.1f} % interval {100 * ti['lo']:+.1f} to {100 * ti['hi']:+.1f}; "
                 f"two-level bootstrap 95 % {100 * b['lo']:+.1f} to {100 * b['hi']:+.1f}; {len(c['seeds'])} seeds, "
                 f"{c['n_test']} test passages")
    if c["holm"]["rejected"]:
        who = "pretraining beats counting patterns" if c["mean"] > 0 else "counting patterns beat pretraining"
        return f"On {c['task']}, {who} by {_pts(abs(c['mean']))} points ({intervals})."
    return (f"On {c['task']}, at this size we cannot tell them apart: LP-FT minus n-grams {100 * c['mean']:+.1f} points "
            f"({intervals}); the smallest difference this lab could see is {_pts(c['smallest_seen'])} points.")


def answer_text(cells: list[dict]) -> str:
    return (f"With {SIZE} labelled examples, on the tasks no pretrained head reads: "
            + " ".join(cell_text(c) for c in cells))


HEADCHECK = "finetune_headcheck.jsonl"  # in the model set: `python -m training.finetune.headcheck ... --out`


def headcheck_rows(model) -> list[dict]:
    """The head check's lines (training/finetune/headcheck.py), kept beside the result files."""
    import json
    from pathlib import Path

    path = Path(model) / HEADCHECK
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def markdown(card: dict) -> list[str]:
    """The primary question's lines of docs/finetune.md: its answer, its cells, the head check."""
    p = card.get("primary")
    if not p:
        return []
    out = [f"**The primary question** (planned in training/tasks/README.md before its runs): {p['text']}\n",
           "| task | seeds | test passages | LP-FT | n-grams | LP-FT - n-grams | paired t, p | Holm level | "
           "t interval at it | two-level bootstrap 95 % | smallest difference seen (80 % power) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in p["cells"]:
        if c["mean"] is None:
            out.append(f"| {c['task']} | 0 | - | - | - | - | - | - | - | - | - |")
            continue
        ti, b, t = c["t_interval"], c["bootstrap"], c["test"]
        p_txt = "-" if t["p"] is None else f"{t['p']:.2g}"
        ti_txt = "-" if ti["lo"] is None else f"{100 * ti['lo']:+.1f} to {100 * ti['hi']:+.1f}"
        b_txt = "-" if b["lo"] is None else f"{100 * b['lo']:+.1f} to {100 * b['hi']:+.1f}"
        seen = "-" if c["smallest_seen"] is None else f"{100 * c['smallest_seen']:.1f}"
        out.append(f"| {c['task']} | {len(c['seeds'])} | {c['n_test']} | {100 * c['full']:.1f} | {100 * c['ngram']:.1f} | "
                   f"{100 * c['mean']:+.1f} | {p_txt} | {100 * c['holm']['level']:.1f} % "
                   f"({'kept' if c['holm']['rejected'] else 'not kept'}) | {ti_txt} | {b_txt} | {seen} |")
    rows = card.get("headcheck") or []
    if rows:
        out += ["\nChecked unreadable before the runs (`python -m training.finetune.headcheck --task repeats --task "
                "questions`): each head's reading of every letter, its threshold set on the training part, F1 % on the "
                "test part's letters against marking every letter; a reading more than 5 points above that reads the task.\n",
                "| task | head | reading | AUC | F1 % | marking every letter | reads it |", "|---|---|---|---|---|---|---|"]
        out += [f"| {r['task']} | {r['head']} | {r['reading']} | {r['auc']:.3f} | {100 * r['f1']:.1f} | "
                f"{100 * r['every_letter_f1']:.1f} | {'yes' if r['reads'] else 'no'} |" for r in rows]
    return out + [""]
