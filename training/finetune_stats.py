"""The fine-tune lab's scores and their 95 % intervals.

Scores. A whole-input task is scored by accuracy (the share of held-out texts labelled right). A
per-character task is scored by F1 of the rarer tags: with capitals, about 9 characters in 100 are
capitals, so a model that never writes one is 91 % "accurate" and useless; F1 counts only the rare
tags: precision (of the characters it marked, how many were right) and recall (of the right ones,
how many it found), combined as 2 TP / (2 TP + FP + FN). "Rarer" = every tag but the most common one
in the task's training examples; with two tags that is exactly F1 of the rarer one.

Each fine-tune's answers are kept per held-out example as five counts, `UNIT_COLUMNS`: right,
total (1 for a whole text, its characters for a per-character text), and TP, FP, FN of the rarer
tags. Every score is a function of the column sums, so it can be recomputed on any resample.

Intervals: a percentile bootstrap that resamples both sources of chance at once (2,000 times,
seeded): which seeds (different labelled examples and starting weights) and which held-out
examples (the test set is one sample of the texts the task could have had). Each interval stays
inside what the score can be (0 to 100 %). A difference of two arms resamples the same seeds and
the same held-out examples for both (paired), so it measures the arms, not the luck of the draw.
Plain Python + numpy.
"""
from __future__ import annotations

import numpy as np

UNIT_COLUMNS = ("right", "total", "tp", "fp", "fn")
RESAMPLES = 2000
BOOT_SEED = 20_260


def units(preds: list, golds: list, kind: str, majority: int) -> np.ndarray:
    """(n_test, 5) counts per held-out example. preds/golds: label ids (sequence) or per-character
    label-id lists (token; gold entries of -100 are not scored)."""
    out = np.zeros((len(golds), 5), dtype=np.int64)
    for i, (p, g) in enumerate(zip(preds, golds)):
        pairs = [(p, g)] if kind == "sequence" else [(a, b) for a, b in zip(p, g) if b != -100]
        for a, b in pairs:
            out[i, 0] += a == b
            out[i, 1] += 1
            out[i, 2] += a == b and b != majority
            out[i, 3] += a != b and a != majority
            out[i, 4] += a != b and b != majority
    return out


def metric_of(sums: np.ndarray, metric: str) -> np.ndarray:
    """The score of column sums (..., 5): accuracy or F1 of the rarer tags (0 when there is nothing
    to find and nothing was marked)."""
    sums = np.asarray(sums, dtype=np.float64)
    if metric == "accuracy":
        return sums[..., 0] / np.maximum(sums[..., 1], 1)
    denom = 2 * sums[..., 2] + sums[..., 3] + sums[..., 4]
    return np.where(denom > 0, 2 * sums[..., 2] / np.maximum(denom, 1), 0.0)


def score(u: np.ndarray, metric: str) -> float:
    return float(metric_of(u.sum(0), metric))


def _draws(n_seeds: int, n_units: int, rng: np.random.Generator):
    seeds = rng.integers(0, n_seeds, size=(RESAMPLES, n_seeds))
    weights = np.stack([np.bincount(rng.integers(0, n_units, n_units), minlength=n_units) for _ in range(RESAMPLES)])
    return seeds, weights


def _resampled(stack: np.ndarray, seeds: np.ndarray, weights: np.ndarray, metric: str) -> np.ndarray:
    """(RESAMPLES,) mean score over the drawn seeds on the drawn held-out examples."""
    sums = np.einsum("snk,bn->bsk", stack, weights)  # (B, S, 5)
    per_seed = metric_of(sums, metric)  # (B, S)
    return np.take_along_axis(per_seed, seeds, axis=1).mean(1)


def interval(per_seed_units: list[np.ndarray], metric: str) -> dict:
    """{"mean", "lo", "hi", "n"}: the mean score over seeds and its 95 % bootstrap interval."""
    n = len(per_seed_units)
    if n == 0:
        return {"mean": None, "lo": None, "hi": None, "n": 0}
    stack = np.stack(per_seed_units)
    mean = float(np.mean([score(u, metric) for u in per_seed_units]))
    seeds, weights = _draws(n, stack.shape[1], np.random.default_rng(BOOT_SEED))
    lo, hi = np.percentile(_resampled(stack, seeds, weights, metric), [2.5, 97.5])
    return {"mean": mean, "lo": float(min(lo, mean)), "hi": float(max(hi, mean)), "n": n}


def paired_difference(a: dict[int, np.ndarray], b: dict[int, np.ndarray], metric: str) -> dict:
    """a - b over the seeds both have, resampling the same seeds and held-out examples for both."""
    common = sorted(set(a) & set(b))
    if not common:
        return {"mean": None, "lo": None, "hi": None, "n": 0, "seeds": []}
    sa, sb = np.stack([a[s] for s in common]), np.stack([b[s] for s in common])
    mean = float(np.mean([score(a[s], metric) - score(b[s], metric) for s in common]))
    seeds, weights = _draws(len(common), sa.shape[1], np.random.default_rng(BOOT_SEED + 1))
    diff = _resampled(sa, seeds, weights, metric) - _resampled(sb, seeds, weights, metric)
    lo, hi = np.percentile(diff, [2.5, 97.5])
    return {"mean": mean, "lo": float(min(lo, mean)), "hi": float(max(hi, mean)), "n": len(common), "seeds": common}


def clear(d: dict) -> bool:
    """Does the interval of a difference exclude 0?"""
    return d.get("lo") is not None and (d["lo"] > 0 or d["hi"] < 0)
