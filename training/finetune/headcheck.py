"""Does any pretrained head read a per-character task with no fine-tuning? (issue 52, the primary question)

    python -m training.finetune.headcheck --task repeats --task questions [--model models] [--out FILE]

A task is only evidence for "pretraining helps where no head can answer" if no head can answer it.
Declaring "readout": "none" is a claim; this measures it. Every per-character reading the two
pretrained heads give, on the letters of the task (its tags mark letters only):

    bert p(letter)      BERT's masked-LM head, the letter replaced by [MASK]: p(the letter that is there)
    bert 1 - p(letter)  the same, reversed (an unlikely letter: typos' and names' readout)
    gpt p(letter)       the GPT's next-character head given the text before it (a "\\n" first, as a
                        line start): p(the letter that comes)
    gpt 1 - p(letter)   the same, reversed

A copy (a repeated word's letters) is likelier under both heads, so `p(letter)` is the reading a
repeat could leak through. Each reading gets its threshold where it scores best on the training
part's letters (readout.best_cut: F1 of the tag) and is scored on the test part's letters; AUC (how
often a tagged letter outranks an untagged one) says how much the number knows at any threshold.
"Marking every letter" is the floor a reading must clear. The rule the primary question fixed
beforehand (training/tasks/README.md): a reading more than READS points above that floor reads the task.
One JSON line per task and reading; `--out` keeps them (models/finetune_headcheck.jsonl,
beside the result files: it is not one of them).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from .readout import best_cut, char_scores
from .tasks import load_task

READS = 0.05  # F1 above marking every letter that counts as "a head reads it"


def auc(scores: np.ndarray, gold: np.ndarray) -> float:
    """P(a tagged letter's score > an untagged one's), ties counted half (Mann-Whitney)."""
    from scipy.stats import rankdata

    pos = gold.astype(bool)
    n1, n0 = int(pos.sum()), int((~pos).sum())
    if not n1 or not n0:
        return float("nan")
    ranks = rankdata(scores)
    return float((ranks[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def f1(pred: np.ndarray, gold: np.ndarray) -> float:
    tp = int(np.sum(pred & gold))
    return 2 * tp / max(2 * tp + int(np.sum(pred & ~gold)) + int(np.sum(~pred & gold)), 1)


def letters(examples, keep: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(texts cut at keep, which characters are letters, their gold tags) over a part's examples."""
    texts = [e.text[:keep] for e in examples]
    at = np.concatenate([[c.isalpha() for c in t] for t in texts]).astype(bool)
    gold = np.concatenate([[c == "1" for c in e.tags[:keep]] for e in examples]).astype(bool)
    return texts, at, gold


def bert_p(bert, stoi: dict, texts: list[str], keep: int) -> np.ndarray:
    """p(the character there) at a [MASK] on it, every character of every text, concatenated."""
    return np.concatenate([1.0 - char_scores(bert, stoi, t, {"masked": "other"}, keep) for t in texts])


def gpt_p(scorer, texts: list[str]) -> np.ndarray:
    """p(the character) given the text before it (a "\\n" first), every character, concatenated."""
    out = []
    for t in texts:
        lp = scorer.log_probs("\n" + t)  # row k: the character after position k
        ids = [scorer.stoi.get(c, 1) for c in t]
        out.append(np.exp(lp[np.arange(len(t)), ids]))
    return np.concatenate(out) if out else np.zeros(0)


def check(task_name: str, folder: Path) -> list[dict]:
    from ..inspect_export import model_from_onnx
    from ..tokenizer import CharTokenizer
    from .gpt import GPTScorer

    task = load_task(task_name)
    if task.kind != "token":
        raise SystemExit(f"--task: {task_name} is a whole-input task; this checks per-character ones")
    bert, _ = model_from_onnx(folder, "bert")
    bert.eval()
    stoi = CharTokenizer.load(folder / "vocab.json").stoi
    scorer = GPTScorer(folder)
    keep = min(bert.cfg.context - 2, scorer.context - 1)
    parts = {split: letters(ex, keep) for split, ex in (("train", task.train), ("test", task.test))}
    with torch.no_grad():
        raw = {split: {"bert": bert_p(bert, stoi, texts, keep), "gpt": gpt_p(scorer, texts)}
               for split, (texts, _, _) in parts.items()}
    _, test_at, test_gold = parts["test"]
    y_test = test_gold[test_at]
    floor = f1(np.ones_like(y_test), y_test)
    rows = []
    for head in ("bert", "gpt"):
        for way, sign in (("p(letter)", 1.0), ("1 - p(letter)", -1.0)):
            _, at, gold = parts["train"]
            cut = best_cut(sign * raw["train"][head][at], gold[at].astype(int), "f1")
            s = sign * raw["test"][head][test_at]
            score = f1(s > cut, y_test)
            rows.append({"task": task_name, "head": head, "reading": way, "auc": round(auc(s, y_test), 4),
                         "f1": round(score, 4), "every_letter_f1": round(floor, 4),
                         "reads": bool(score > floor + READS), "threshold": round(float(sign * cut), 6),
                         "test_letters": int(len(y_test)), "tagged": int(y_test.sum())})
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", action="append", required=True, help="a per-character task (repeatable)")
    p.add_argument("--model", default="models")
    p.add_argument("--out", default=None, help="also write the JSON lines here")
    a = p.parse_args()
    rows = [r for t in a.task for r in check(t, Path(a.model))]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    print(text, end="")
    if a.out:
        out = Path(a.out)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(out)


if __name__ == "__main__":
    main()
