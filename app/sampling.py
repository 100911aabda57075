"""THE sampling rule and THE random stream, shared by /api/next-token (stepping), /api/generate
and its stream (numpy only).

A next-character distribution in three stages (raw softmax; after temperature; after top-k then
top-p truncation, renormalised), its entropies, and the draw from the final stage with the
uniform number of one (seed, character index) pair: the i-th generated character is drawn with
uniform(seed, i) however it is generated (stepped, played, streamed or all at once).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .contract import splitmix32, uniform  # noqa: F401  (the random stream is the contract's; re-exported)


def softmax(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis in float64 (entropies and top-p sums need the precision)."""
    z = np.asarray(x, dtype=np.float64)
    if z.size == 0:
        return z
    z = np.exp(z - z.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def ranked(chars: list[str], probs: np.ndarray, n: int) -> list[dict]:
    """The n likeliest characters of `probs` (over the ordinary characters), likeliest first."""
    n = max(1, min(n, len(probs)))
    idx = np.argpartition(-probs, n - 1)[:n] if n < len(probs) else np.arange(len(probs))
    idx = idx[np.argsort(-probs[idx], kind="stable")]
    return [{"char": chars[i], "prob": float(probs[i])} for i in idx]


def entropy(p: np.ndarray) -> float:
    nz = p[p > 0]
    return float(-(nz * np.log(nz)).sum())


@dataclass
class Distribution:
    """The three stages of one next-character distribution, over the ordinary characters."""

    raw: np.ndarray  # softmax(logits)
    tempered: np.ndarray  # softmax(logits / temperature); one-hot at the argmax when greedy
    final: np.ndarray  # tempered after top-k then top-p, renormalised; 0 for cut characters
    kept: np.ndarray  # bool: survived the truncation
    greedy: bool

    @property
    def entropies(self) -> dict:
        return {"raw": entropy(self.raw), "tempered": entropy(self.tempered), "final": entropy(self.final)}

    def top(self, n: int = 5) -> list[int]:
        """Indices of the n most likely characters of the final distribution (kept ones only)."""
        n = min(n, int(self.kept.sum()))
        idx = np.argpartition(-self.final, n - 1)[:n] if n < len(self.final) else np.arange(len(self.final))
        return [int(i) for i in idx[np.argsort(-self.final[idx], kind="stable")]][:n]


def sampling_distribution(logits: np.ndarray, temperature: float, top_k: int, top_p: float) -> Distribution:
    """THE sampling rule (used by /api/next-token and by every generated character).

    `logits` are over the ordinary characters only (special tokens are never candidates).
    temperature 0 = greedy: all mass on the argmax. Otherwise logits / temperature.
    top_k 0 = off; else keep the k most likely (ties: lower id first). top_p 1.0 = off; else,
    after top-k, keep the smallest set of most likely characters whose mass reaches top_p.
    """
    logits = np.asarray(logits, dtype=np.float64)  # one precision for all three distributions
    raw = softmax(logits)
    n = raw.shape[-1]
    greedy = temperature == 0
    if greedy:
        tempered = np.zeros(n)
        tempered[int(np.argmax(logits))] = 1.0
    elif temperature == 1.0:
        tempered = raw
    else:
        # Shift first: logits / 1e-300 would overflow to inf and softmax to NaN. Shifted, the
        # argmax is 0 / t = 0 and the rest tend to -inf: a tiny temperature tends to greedy.
        with np.errstate(over="ignore"):
            tempered = softmax((logits - logits.max()) / temperature)
    keep_n = n if top_k <= 0 or top_k >= n else top_k
    if keep_n == n and top_p >= 1.0 and not greedy:  # no truncation: nothing to sort (the common case)
        return Distribution(raw=raw, tempered=tempered, final=tempered, kept=np.ones(n, dtype=bool), greedy=False)
    order = np.argsort(-tempered, kind="stable")  # most likely first
    if top_p < 1.0:
        mass = np.cumsum(tempered[order[:keep_n]])
        # smallest prefix reaching p of the top-k renormalised mass; tolerance for float rounding
        reach = top_p * mass[-1] - 1e-12
        keep_n = min(keep_n, int(np.searchsorted(mass, reach, side="left")) + 1)
    kept = np.zeros(n, dtype=bool)
    kept[order[:keep_n]] = True
    if greedy:
        kept &= tempered > 0  # only the argmax can be drawn
    final = np.where(kept, tempered, 0.0)
    final /= final.sum()
    return Distribution(raw=raw, tempered=tempered, final=final, kept=kept, greedy=greedy)


def draw(dist: Distribution, u: float) -> int:
    """One character index from the final distribution by inverse CDF in vocabulary order, with
    the uniform number u (greedy ignores it)."""
    if dist.greedy:
        return int(np.argmax(dist.final))
    cdf = np.cumsum(dist.final)
    # side="right" never lands on a zero-probability (cut) character ...
    i = int(np.searchsorted(cdf, u * cdf[-1], side="right"))
    # ... except past the end after float rounding: then the last kept one
    return i if i < len(cdf) else int(np.flatnonzero(dist.final)[-1])
