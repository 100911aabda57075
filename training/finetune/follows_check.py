"""How well BERT's next-sentence head reads `follows` with no labels (issue 52): the task's declared
readout, {"nsp": "follows"}, on its test part, as the lab's readout arm computes it (readout.py).

    python -m training.finetune.follows_check [--model models] [--task follows]

Prints one JSON object: the test part's size and labels, the zero-label rule's accuracy (p(IsNext)
> 0.5 says "follows") with a 95 % Wilson interval (how far luck in picking these pairs could move
it), the AUC (how often a "follows" pair outranks an "elsewhere" one: what p(IsNext) knows at any
threshold), how often the head says IsNext, and the accuracy with one threshold set on all the
labelled examples; then the same per play. No weights change; about 10 s on one core.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import torch

from ..inspect_export import model_from_onnx
from ..tokenizer import CharTokenizer
from .headcheck import auc
from .loop import TaskData
from .readout import Readout
from .tasks import TASKS_DIR, load_task


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % interval of a share k / n (Wilson's: stays inside 0..1 and fits a share near 50 %)."""
    p = k / n
    mid, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (mid - half) / (1 + z * z / n), (mid + half) / (1 + z * z / n)


def figures(scores: np.ndarray, gold: np.ndarray, zero: np.ndarray, fitted: np.ndarray) -> dict:
    """gold, zero, fitted: 1 = "follows" (the declared label), per test pair."""
    n, right = len(gold), int((zero == gold).sum())
    low, high = wilson(right, n)
    return {"pairs": n, "follows": int(gold.sum()), "zero_label_accuracy": round(100 * right / n, 1),
            "zero_label_95": [round(100 * low, 1), round(100 * high, 1)], "auc": round(auc(scores, gold), 3),
            "says_isnext": round(100 * float(zero.mean()), 1),
            "one_threshold_accuracy": round(100 * float((fitted == gold).mean()), 1)}


def check(folder: Path, task_name: str) -> dict:
    task = load_task(task_name)
    bert = model_from_onnx(folder, "bert")[0].eval()
    data = TaskData(task, CharTokenizer.load(folder / "vocab.json").stoi, bert.cfg.context)
    r = Readout(folder, bert, data)
    if "nsp" not in r.decl:
        raise SystemExit(f"--task: {task_name} declares {task.meta.get('readout')!r}, not an \"nsp\" readout")
    high = r.high
    gold = np.array([y == high for _, y in data.test], dtype=int)
    zero = np.array(r.zero()[0]) == high
    fitted_preds, info = r.run(list(range(len(data.train))))
    fitted = np.array(fitted_preds) == high
    out = {"task": task_name, "readout": task.meta["readout"], "model": str(folder),
           "threshold_on_all_labelled": info["threshold"], "above": info["above"],
           **figures(r.test, gold, zero.astype(int), fitted.astype(int)), "plays": {}}
    file = TASKS_DIR / f"{task_name}.jsonl"  # a shipped task's rows name their play ("source")
    rows = file.read_text(encoding="utf-8").splitlines() if file.exists() else []
    sources = np.array([json.loads(rows[e.line - 1]).get("source", "") if rows else "" for e in task.test])
    for play in dict.fromkeys(s for s in sources if s):
        at = sources == play
        out["plays"][play] = figures(r.test[at], gold[at], zero[at].astype(int), fitted[at].astype(int))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="models", help="the model set's folder (bert.onnx, vocab.json)")
    p.add_argument("--task", default="follows", help="a task declaring an \"nsp\" readout")
    args = p.parse_args()
    torch.set_num_threads(1)
    print(json.dumps(check(Path(args.model), args.task)))


if __name__ == "__main__":
    main()
