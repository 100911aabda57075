"""The `likelihood` arm: no labels taught, no weights changed. The model set's GPT reads each text
and says how likely it finds it: the mean log-probability of each character given the ones before
(a "\\n" first, as a line start). Texts that look like the English it was pretrained on score high;
jumbled or backwards ones score low. One threshold, set on the arm's labelled examples (the cut
that labels most of them right; which side is which label is set there too), turns that number into
an answer. If this row matches the trained arms, the task is the pretraining objective in disguise.

Whole-input tasks with two labels only (a per-character task or more labels: the arm is skipped
and says why). onnxruntime only: the graph the app serves.
"""
from __future__ import annotations

import numpy as np

from .finetune_gpt import GPTScorer
from .finetune_loop import TaskData


def why_not(data: TaskData, has_gpt: bool) -> str | None:
    if data.kind != "sequence":
        return "likelihood scores a whole text, not each character: not for a per-character task"
    if len(data.labels) != 2:
        return f"likelihood sets one threshold between two labels; this task has {len(data.labels)}"
    if not has_gpt:
        return "this model set has no GPT (gpt.onnx) to read the texts"
    return None


def text_scores(scorer: GPTScorer, texts: list[str]) -> np.ndarray:
    """Mean log-probability per character of each text (cut to the GPT's context)."""
    out = np.zeros(len(texts))
    for i, text in enumerate(texts):
        text = text[: scorer.context - 1]
        lp = scorer.log_probs("\n" + text)
        ids = [scorer.stoi.get(c, 1) for c in text]
        out[i] = float(np.mean([lp[k, t] for k, t in enumerate(ids)]))
    return out


class Likelihood:
    """Every text's score, computed once per task: `train` and `test` arrays."""

    def __init__(self, folder, data: TaskData, threads: int = 1):
        scorer = GPTScorer(folder, threads)
        self.train = text_scores(scorer, [t for t, _ in data.train])
        self.test = text_scores(scorer, [t for t, _ in data.test])

    def run(self, data: TaskData, chosen: list[int]) -> tuple[list[int], dict]:
        """(test predictions, info): the threshold that labels the most chosen examples right."""
        s = self.train[chosen]
        y = np.array([data.train[i][1] for i in chosen])
        order = np.sort(np.unique(s))
        cuts = np.concatenate([[order[0] - 1.0], (order[:-1] + order[1:]) / 2, [order[-1] + 1.0]])
        best = None
        for cut in cuts:
            above = s > cut
            for high in (0, 1):  # which label the texts above the cut get
                right = int(np.sum(np.where(above, high, 1 - high) == y))
                if best is None or right > best[0]:
                    best = (right, float(cut), high)
        _, cut, high = best
        preds = np.where(self.test > cut, high, 1 - high).astype(int).tolist()
        return preds, {"steps": 0, "threshold": round(cut, 4), "above": data.labels[high],
                       "labelled_right": round(best[0] / len(chosen), 4)}
