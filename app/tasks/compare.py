"""GPT vs BERT on one blank (the /compare lesson): each model's guess at one position, and both
models' probability of the true character at every position. Plain results; inputs arrive checked."""
from __future__ import annotations

import numpy as np

from ..contract import FIRST_CHAR
from ..sampling import entropy, softmax


def guess(p: np.ndarray, true: int, top_k: int, ranked, reads: str) -> dict:
    known = true >= FIRST_CHAR
    po = float(p[true - FIRST_CHAR]) if known else None
    return {"available": True, "p_true": po, "rank": int((p > po).sum()) + 1 if known else None,
            "entropy": entropy(p), "top": ranked(p, top_k), "reads": reads}


def strip_of(gpt, bert, ids: list[int]) -> list[dict]:
    """Both models' probability of the true character at every position."""
    n = len(ids)
    # GPT: one forward over the text gives p(char i | chars < i) at every i (row i - 1).
    gpt_probs = softmax(gpt.logits(ids[:gpt.context])[:, FIRST_CHAR:]) if n > 1 else np.zeros((0, 0))
    # BERT: one forward per position, each with that character masked (a batch of n rows).
    bert_probs = bert.each_masked(ids)
    strip = []
    for i, t in enumerate(ids):
        known = t >= FIRST_CHAR
        g = float(gpt_probs[i - 1, t - FIRST_CHAR]) if known and 0 < i <= gpt_probs.shape[0] else None
        strip.append({"position": i, "char": bert.vocab.token(t), "gpt": g,
                      "bert": float(bert_probs[i, t - FIRST_CHAR]) if known else 0.0})
    return strip
