"""The `readout` arm: what the pretrained model already knows before any label (issue 32). No weights
change; the model's own pretraining head is read, the way each task declares (training/finetune/tasks.py,
"readout"), and turned into an answer two ways:

    size 0   a fixed rule the task declares (no label seen at all): "zero" below
    size n   one threshold on the same number, chosen on the labelled examples' training part
             (the cut that scores best there: F1 of the rarer tag, or accuracy for a whole text)

Per-character tasks read BERT's masked-language-model head (the head pretraining trained: given the
characters around a [MASK], the probability of every character there):

    {"insert": " "}          a [MASK] inserted after character i: p(one of these characters there)
                             (spaces: "was a space here?"; punctuation: ",.;:!?")      zero: > 0.5
    {"masked": "other"}      character i replaced by [MASK]: 1 - p(the character that is there)
                             (typos: a letter the model finds unlikely)                zero: > 0.99
    {"masked": "upper"}      character i replaced by [MASK]: p(its capital) / (p(capital) + p(small))
                             (capitals; not a letter: 0)                               zero: > 0.5
    + "positions": "letters"  the readout scores letters only: any other character is never marked and
                             the one threshold is set on letters alone (typos: a space or a mark is no typo)

Whole-input tasks with two labels read the GPT: the mean log-probability per character of the text
(a "\\n" first, as a line start): how English-like it finds it. {"gpt": LABEL} says which label the
likelier texts have; its zero-label rule: LABEL when the text costs the GPT less than twice its own
held-out loss (gpt.card.json, nats per character). A whole-input task is read only when it declares
"gpt" (issue 42: GPT's likelihood means nothing for most questions; sentiment got 43 % as its "readout").
{"nsp": LABEL} reads BERT's next-sentence head instead, for texts that are two lines joined by "\n"
(`follows`, issue 52): p(IsNext) of [CLS] first line [SEP] second line [SEP] (the quiz's pair,
training/quiz.py pair_input; a text without a line break is the first line and an empty second);
zero labels: LABEL when p(IsNext) > 0.5, the shipped head's decision (its bias was shifted on
validation pairs so that it says IsNext on half of them: training/nsp_calibration.py).
A task declaring "none", or nothing, has no readout (the arm is skipped and says why). The vocabulary
and its checks: app/contract/readouts.py; a task file declares it on its first line, --readout on the
command line overrides it.

Every score of a task's examples is computed once (one pass of the model per character for the
per-character reads: the cost of this arm) and reused for every size and seed.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from app.contract import readouts

from .loop import TaskData
from ..quiz import pair_input
from ..tokenizer import CLS, MASK, PAD, SEP, UNK

ZERO_CUT = {"insert": 0.5, "other": 0.99, "upper": 0.5}
GPT_ZERO_FACTOR = 2.0
NSP_ZERO_CUT = 0.5
NSP_BATCH = 64


def declared(task) -> dict | None:
    """The task's readout declaration, or None for "none" and for a task that declares nothing."""
    d = task.meta.get("readout")
    return None if d in (None, "none") else d


def why_not(task, has_gpt: bool) -> str | None:
    """Why the arm is skipped for this task (None: it runs): app/contract/readouts.py's rule, which the
    page's plan says before Start."""
    return readouts.why_not(task.meta.get("readout"), task.kind, task.labels, has_gpt)


def describe(task) -> str:
    return readouts.words(declared(task), task.kind)


def scored(text: str, d: dict, keep: int) -> np.ndarray:
    """Which characters of text[:keep] the readout scores (the declaration's "positions")."""
    text = text[:keep]
    if d.get("positions") == "letters":
        return np.array([c.isalpha() for c in text], dtype=bool)
    return np.ones(len(text), dtype=bool)


@torch.no_grad()
def char_scores(bert, stoi: dict, text: str, d: dict, keep: int) -> np.ndarray:
    """One score per character of text[:keep] (higher = more like the rarer tag)."""
    text = text[:keep]
    ids = [stoi.get(c, UNK) for c in text]
    n = len(ids)
    if n == 0:
        return np.zeros(0)
    if "insert" in d:
        rows = [[CLS] + ids[:i + 1] + [MASK] + ids[i + 1:] + [SEP] for i in range(n)]
        at = [i + 2 for i in range(n)]
    else:
        rows = [[CLS] + ids[:i] + [MASK] + ids[i + 1:] + [SEP] for i in range(n)]
        at = [i + 1 for i in range(n)]
    x = torch.tensor(rows)
    logits, _ = bert(x, torch.zeros_like(x))
    p = torch.softmax(logits[torch.arange(n), torch.tensor(at)], -1).numpy()  # (n, vocab)
    if "insert" in d:
        cols = [stoi[c] for c in d["insert"] if c in stoi]
        return p[:, cols].sum(1)
    if d.get("masked") == "upper":
        out = np.zeros(n)
        for i, c in enumerate(text):
            up = c.upper()
            if up != c and up in stoi and c in stoi:
                a, b = p[i, stoi[up]], p[i, stoi[c]]
                out[i] = a / max(a + b, 1e-12)
        return out
    return 1.0 - p[np.arange(n), ids]


def lines_of(text: str) -> tuple[str, str]:
    """(first line, the rest) of a text, split at its first line break; no break: (text, "")."""
    a, _, b = text.partition("\n")
    return a, b


@torch.no_grad()
def pair_scores(bert, stoi: dict, texts: list[str], context: int) -> np.ndarray:
    """p(IsNext) of each text's second line after its first. A pair longer than BERT's context is cut
    as pretraining cut its pairs: the first line to the room, then the second to what is left."""
    room = context - 3  # [CLS] a [SEP] b [SEP]
    rows = []
    for t in texts:
        a, b = lines_of(t)
        a_ids = [stoi.get(c, UNK) for c in a[:room]]
        rows.append(pair_input(a_ids, [stoi.get(c, UNK) for c in b[:room - len(a_ids)]]))
    out = []
    for k in range(0, len(rows), NSP_BATCH):  # padded batches: BERT attends to no padding (model.py allowed)
        chunk = rows[k:k + NSP_BATCH]
        width = max(len(ids) for ids, _ in chunk)
        ids = torch.tensor([r + [PAD] * (width - len(r)) for r, _ in chunk])
        seg = torch.tensor([s + [0] * (width - len(s)) for _, s in chunk])
        _, nsp = bert(ids, seg)
        out.append(torch.softmax(nsp, -1)[:, 0].numpy())  # class 0 = IsNext
    return np.concatenate(out) if out else np.zeros(0)


def best_cut(scores: np.ndarray, gold: np.ndarray, metric: str) -> float:
    """The cut c (answer 1 where score > c) that scores best on (scores, gold): F1 of the 1s, or accuracy."""
    order = np.argsort(-scores)
    s, g = scores[order], gold[order].astype(np.int64)
    tp = np.cumsum(g)  # marking the top k: TP, FP for every k
    k = np.arange(1, len(s) + 1)
    fp, pos = k - tp, int(g.sum())
    val = 2 * tp / np.maximum(2 * tp + fp + (pos - tp), 1) if metric == "f1" else (tp + (len(g) - pos - fp)) / len(g)
    last = np.r_[s[1:] != s[:-1], True]  # only cut between distinct scores
    val = np.where(last, val, -1)
    none = 0.0 if metric == "f1" else (len(g) - pos) / max(len(g), 1)
    i = int(np.argmax(val)) if len(g) else 0
    if len(g) == 0 or val[i] <= none:
        return float(s[0]) + 1.0 if len(s) else 1.0  # marking nothing is best: a cut above every score
    return float((s[i] + s[i + 1]) / 2) if i + 1 < len(s) else float(s[i]) - 1e-9


class Readout:
    """Every example's readout score, computed once: `train` and `test` (arrays, or per-text arrays)."""

    def __init__(self, folder: Path, bert, data: TaskData, threads: int = 1):
        self.data, self.decl = data, declared(data.task) or {}
        self.positive = data.labels.index("1") if "1" in data.labels else (1 - data.majority if len(data.labels) == 2 else None)
        if data.kind == "sequence" and "nsp" in self.decl:
            bert.eval()
            self.train = pair_scores(bert, data.stoi, [t for t, _ in data.train], data.context)
            self.test = pair_scores(bert, data.stoi, [t for t, _ in data.test], data.context)
            self.zero_cut, self.high = NSP_ZERO_CUT, data.labels.index(self.decl["nsp"])
        elif data.kind == "sequence":
            from .gpt import GPTScorer, text_scores

            scorer = GPTScorer(folder, threads)
            self.train = text_scores(scorer, [t for t, _ in data.train])
            self.test = text_scores(scorer, [t for t, _ in data.test])
            card = json.loads((Path(folder) / "gpt.card.json").read_text(encoding="utf-8"))
            loss = card.get("evaluation", {}).get("validation", {}).get("nats_per_char")
            self.zero_cut = -GPT_ZERO_FACTOR * loss if loss and "gpt" in self.decl else None
            self.high = data.labels.index(self.decl["gpt"]) if "gpt" in self.decl else None
        else:
            bert.eval()
            keep = data.context - 2
            self.train = [char_scores(bert, data.stoi, t, self.decl, keep) for t, _ in data.train]
            self.test = [char_scores(bert, data.stoi, t, self.decl, keep) for t, _ in data.test]
            self.train_at = [scored(t, self.decl, keep) for t, _ in data.train]  # the positions it scores
            self.test_at = [scored(t, self.decl, keep) for t, _ in data.test]
            self.zero_cut = ZERO_CUT["insert" if "insert" in self.decl else self.decl.get("masked", "other")]

    def _answer(self, scores, cut: float, high: int):
        if self.data.kind == "sequence":
            return np.where(scores > cut, high, 1 - high).astype(int).tolist()
        other = 1 - self.positive
        return [np.where(at & (s > cut), self.positive, other).astype(int).tolist() for s, at in zip(scores, self.test_at)]

    def zero(self) -> tuple[list, dict] | None:
        """Test predictions of the declared zero-label rule, or None when the task declares none."""
        if self.zero_cut is None:
            return None
        high = self.high if self.data.kind == "sequence" else self.positive
        return self._answer(self.test, self.zero_cut, high), {"steps": 0, "threshold": round(self.zero_cut, 4),
                                                              "rule": "zero labels (declared)"}

    def run(self, fit: list[int]) -> tuple[list, dict]:
        """Test predictions with one threshold chosen on the fit examples."""
        if self.data.kind == "sequence":
            s = self.train[fit]
            y = np.array([self.data.train[i][1] for i in fit])
            highs = [self.high] if self.high is not None else [0, 1]
            best = max(((float(np.mean((s > c) == (y == h))), c, h)
                        for h in highs for c in [best_cut(s, (y == h).astype(int), "accuracy")]), key=lambda t: t[0])
            _, cut, high = best
            info = {"above": self.data.labels[high]}
        else:
            keep = self.data.context - 2
            s = np.concatenate([self.train[i][self.train_at[i]] for i in fit])
            y = np.concatenate([np.asarray(self.data.train[i][1][:keep])[self.train_at[i]] for i in fit]) == self.positive
            cut, high, info = best_cut(s, y.astype(int), "f1"), self.positive, {}
        return self._answer(self.test, cut, high), {"steps": 0, "threshold": round(float(cut), 4),
                                                    "rule": "one threshold on the labelled examples", **info}
