"""Pretraining corruptions beside BERT's own: which positions are selected (per character, in
contiguous spans as SpanBERT does, or whole words), BERT's 80/10/10 on each selected unit, the
two objectives' losses on one text, and BERT's recovery split by what happened at a position.

The shipped BERT was trained per character (training/data.py); spans and whole words are shown
against that model on purpose: a span or a word hides a character's neighbours too, and the
recovery split measures what that costs it."""
from __future__ import annotations

import re

import numpy as np

from ..contract import CLS, FIRST_CHAR, MASK, MASKING_SCHEMES, SEP
from ..sampling import softmax

SCHEMES = MASKING_SCHEMES
MAX_SPAN = 10
WORD = re.compile(r"\w+(?:'\w+)*")


def select_units(rng, text: str, ids: np.ndarray, scheme: str, rate: float, mean_span: float) -> list[list[int]]:
    """Selected positions, grouped in units that share one 80/10/10 decision (one character,
    one span, one word). Only ordinary characters are ever selected."""
    ordinary = ids >= FIRST_CHAR
    n = int(ordinary.sum())
    if scheme == "char":
        chosen = np.flatnonzero((rng.random(len(ids)) < rate) & ordinary)
        return [[int(p)] for p in chosen]
    budget = int(round(rate * n))
    if scheme == "word":
        words = [list(range(m.start(), m.end())) for m in WORD.finditer(text)]
        words = [w for w in words if ordinary[w].all()]
        units, total = [], 0
        for k in rng.permutation(len(words)):
            w = words[int(k)]
            if abs(total + len(w) - budget) < abs(total - budget):  # take it if it brings us nearer
                units.append(w)
                total += len(w)
        return sorted(units)
    # Spans: lengths from a geometric distribution (mean ~mean_span, at most MAX_SPAN), placed on
    # free characters with at least one unselected character between two spans (so each span is
    # one contiguous run), until the budget is spent (the last span is cut to fit).
    taken = np.zeros(len(ids), dtype=bool)
    units, total = [], 0
    for _ in range(50 * max(1, budget)):
        if total >= budget:
            break
        length = min(int(rng.geometric(1.0 / mean_span)), MAX_SPAN, budget - total)
        start = int(rng.integers(0, max(1, len(ids) - length + 1)))
        span = range(start, start + length)
        lo, hi = max(0, start - 1), min(len(ids), start + length + 1)
        if start + length > len(ids) or not ordinary[start:start + length].all() or taken[lo:hi].any():
            continue
        taken[start:start + length] = True
        units.append(list(span))
        total += length
    return sorted(units)


def corrupt(rng, ids: np.ndarray, units: list[list[int]], vocab_size: int):
    """80 % of units become [MASK]s, 10 % random characters, 10 % stay as they are.
    Returns the corrupted ids and the action at each selected position."""
    corrupted = ids.copy()
    actions = {}
    for unit in units:
        r = rng.random()
        action = "mask" if r < 0.8 else "random" if r < 0.9 else "unchanged"
        for p in unit:
            actions[p] = action
            if action == "mask":
                corrupted[p] = MASK
            elif action == "random":
                corrupted[p] = rng.integers(FIRST_CHAR, vocab_size)
    return corrupted, actions


def log_probs(logits: np.ndarray) -> np.ndarray:
    """log softmax over the whole vocabulary (as the training loss, F.cross_entropy, takes it)."""
    z = logits.astype(np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def demo(bert, text: str, ids: list[int], scheme: str, rate: float, mean_span: float, seed: int) -> dict:
    """One corruption of `text` and what BERT recovers; the MLM loss over the selected positions.
    The one corruption every demo uses (Mask-Fill's "corrupt" is this, per character)."""
    rng = np.random.default_rng(seed)
    arr = np.asarray(ids, dtype=np.int64)
    units = select_units(rng, text, arr, scheme, rate, mean_span)
    corrupted, actions = corrupt(rng, arr, units, bert.vocab.size)
    mlm, _ = bert.forward([CLS, *corrupted.tolist(), SEP])  # [CLS] corrupted [SEP]
    mlm = mlm[1:-1]
    positions = sorted(actions)
    rows, losses = [], []
    for pos in positions:
        lp = log_probs(mlm[pos])
        p = softmax(mlm[pos, FIRST_CHAR:])
        best = int(np.argmax(p))
        losses.append(-float(lp[arr[pos]]))
        rows.append({"position": pos, "original": bert.vocab.token(int(arr[pos])), "action": actions[pos],
                     "shown": bert.vocab.token(int(corrupted[pos])), "prediction": bert.vocab.chars[best],
                     "prob": float(p[best]), "correct": FIRST_CHAR + best == int(arr[pos]),
                     "p_original": float(p[arr[pos] - FIRST_CHAR]), "top": bert.ranked(p, 5),
                     "replaced": bool(corrupted[pos] != arr[pos] and actions[pos] == "random")})
    return {"corrupted": [bert.vocab.token(int(t)) for t in corrupted], "selected": rows,
            "units": units, "rate": len(positions) / max(1, int((arr >= FIRST_CHAR).sum())),
            "accuracy": sum(r["correct"] for r in rows) / len(rows) if rows else None,
            "mlm_loss": float(np.mean(losses)) if losses else None}


def clm_loss(gpt, ids: list[int]) -> dict:
    """GPT's loss on the same text: mean over every position of -log p(next | left)."""
    ids = ids[: gpt.context]
    if len(ids) < 2:
        return {"loss": None, "positions": 0}
    lp = log_probs(gpt.logits(ids)[:-1])
    nll = -lp[np.arange(len(ids) - 1), np.asarray(ids[1:])]
    return {"loss": float(nll.mean()), "positions": len(ids) - 1}


def recovery(bert, texts: list[list[int]], strings: list[str], scheme: str, rate: float, mean_span: float,
             draws: int, seed: int) -> dict:
    """BERT's top-1 recovery of the original character over `draws` corruptions of held-out
    texts, split by what happened at the position ([MASK], random character, unchanged)."""
    rng = np.random.default_rng(seed)
    counts = {a: [0, 0] for a in ("mask", "random", "unchanged")}  # action -> [positions, recovered]
    selected = total = 0
    for d in range(draws):
        k = d % len(texts)
        arr = np.asarray(texts[k], dtype=np.int64)
        units = select_units(rng, strings[k], arr, scheme, rate, mean_span)
        corrupted, actions = corrupt(rng, arr, units, bert.vocab.size)
        total += int((arr >= FIRST_CHAR).sum())
        if not actions:
            continue
        pos = np.asarray(sorted(actions))
        mlm, _ = bert.forward([CLS, *corrupted.tolist(), SEP])
        guess = FIRST_CHAR + np.argmax(mlm[pos + 1, FIRST_CHAR:], axis=-1)
        for p, g in zip(pos.tolist(), guess.tolist()):
            c = counts[actions[p]]
            c[0] += 1
            c[1] += int(g == arr[p])
        selected += len(pos)
    by = {a: {"positions": n, "recovered": r, "accuracy": r / n if n else None} for a, (n, r) in counts.items()}
    n_all = sum(c[0] for c in counts.values())
    return {"by_action": by, "positions": n_all, "selected_rate": selected / max(1, total),
            "accuracy": sum(c[1] for c in counts.values()) / n_all if n_all else None}
