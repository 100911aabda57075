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

Intervals (issue 32): at the seed level. Each seed is one whole repeat of the experiment (its own
sample of labelled examples, its own starting head), so the seeds' scores are the independent
measurements: the 95 % interval is Student's t over them (n - 1 degrees of freedom), kept inside
what the score can be (0 to 100 %). A difference of two arms is t over the per-seed differences
(paired: the same seed's examples for both arms). Only where there is a single seed (the readout's
zero-label rule, or --seeds 1) the interval is a percentile bootstrap over the held-out examples
(2,000 resamples, seeded): it then covers the test set's luck only, and METHOD says which was used.
A percentile bootstrap over 3 to 5 seeds cannot reach past the seeds' extremes and is too narrow,
so it is not used for seeds. `corrected` widens a difference's interval for m comparisons
(Bonferroni: level 1 - 0.05 / m), so a claim made among m holds only if that interval excludes 0.
Plain Python + numpy (+ scipy's t quantile).
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


def val_score(pred: np.ndarray, gold: np.ndarray, majority: int | None) -> float:
    """Accuracy (majority None: a whole-input task) or F1 of every label but the majority one."""
    if majority is None:
        return float(np.mean(pred == gold)) if len(gold) else 0.0
    tp = np.sum((pred == gold) & (gold != majority))
    fp = np.sum((pred != gold) & (pred != majority))
    fn = np.sum((pred != gold) & (gold != majority))
    return float(2 * tp / max(2 * tp + fp + fn, 1))


def score(u: np.ndarray, metric: str) -> float:
    return float(metric_of(u.sum(0), metric))


T_METHOD = "Student's t over seeds (n - 1 degrees of freedom), 95 %"
BOOT_METHOD = "percentile bootstrap over the held-out examples (one seed), 95 %"
METHOD = (f"{T_METHOD}; with one seed: {BOOT_METHOD}; claims: Bonferroni-corrected over the comparisons made "
          "(level 1 - 0.05 / m)")


def t_interval(values: list[float], level: float = 0.95) -> tuple[float, float | None, float | None]:
    """(mean, lo, hi) of Student's t over the values (lo, hi None with fewer than 2)."""
    from scipy.stats import t

    v = np.asarray(values, dtype=np.float64)
    mean = float(v.mean())
    if len(v) < 2:
        return mean, None, None
    half = float(t.ppf(0.5 + level / 2, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))
    return mean, mean - half, mean + half


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
    """{"mean", "lo", "hi", "n", "per_seed"}: the mean score over seeds and its 95 % interval
    (t over seeds; one seed: bootstrap over the held-out examples)."""
    n = len(per_seed_units)
    if n == 0:
        return {"mean": None, "lo": None, "hi": None, "n": 0, "per_seed": []}
    per_seed = [score(u, metric) for u in per_seed_units]
    if n > 1:
        mean, lo, hi = t_interval(per_seed)
        return {"mean": mean, "lo": max(0.0, lo), "hi": min(1.0, hi), "n": n, "per_seed": per_seed}
    stack = np.stack(per_seed_units)
    seeds, weights = _draws(1, stack.shape[1], np.random.default_rng(BOOT_SEED))
    lo, hi = np.percentile(_resampled(stack, seeds, weights, metric), [2.5, 97.5])
    mean = per_seed[0]
    return {"mean": mean, "lo": float(min(lo, mean)), "hi": float(max(hi, mean)), "n": 1, "per_seed": per_seed}


def paired_difference(a: dict[int, np.ndarray], b: dict[int, np.ndarray], metric: str) -> dict:
    """a - b over the seeds both have: t over the per-seed differences (one seed: the same held-out
    examples resampled for both)."""
    common = sorted(set(a) & set(b))
    if not common:
        return {"mean": None, "lo": None, "hi": None, "n": 0, "seeds": [], "per_seed": []}
    per_seed = [score(a[s], metric) - score(b[s], metric) for s in common]
    if len(common) > 1:
        mean, lo, hi = t_interval(per_seed)
        return {"mean": mean, "lo": lo, "hi": hi, "n": len(common), "seeds": common, "per_seed": per_seed}
    sa, sb = np.stack([a[s] for s in common]), np.stack([b[s] for s in common])
    seeds, weights = _draws(1, sa.shape[1], np.random.default_rng(BOOT_SEED + 1))
    diff = _resampled(sa, seeds, weights, metric) - _resampled(sb, seeds, weights, metric)
    lo, hi = np.percentile(diff, [2.5, 97.5])
    mean = per_seed[0]
    return {"mean": mean, "lo": float(min(lo, mean)), "hi": float(max(hi, mean)), "n": 1, "seeds": common,
            "per_seed": per_seed}


def corrected(d: dict, m: int) -> dict:
    """The difference's interval widened for m comparisons (Bonferroni): {"lo", "hi", "m", "level"}."""
    level = 1 - 0.05 / max(1, m)
    vals = d.get("per_seed") or []
    if len(vals) < 2:
        return {"lo": None, "hi": None, "m": m, "level": level}
    _, lo, hi = t_interval(vals, level)
    return {"lo": lo, "hi": hi, "m": m, "level": level}


def zero_width(d: dict) -> bool:
    """Is the interval of a difference (or its corrected one) of zero width? Every seed gave the same
    difference (two arms answering the same to every text do): the spread is not measured at all."""
    c = d.get("corrected") or d
    return c.get("lo") is not None and c["hi"] - c["lo"] <= 1e-12


def clear(d: dict) -> bool:
    """Does the interval of a difference (or its corrected one, d["corrected"], when there) exclude 0?
    An interval of zero width never does (issue 42: it measures nothing, so it is never a claim)."""
    c = d.get("corrected") or d
    return c.get("lo") is not None and not zero_width(d) and (c["lo"] > 0 or c["hi"] < 0)


def two_level(a: dict[int, np.ndarray], b: dict[int, np.ndarray], metric: str, level: float = 0.95) -> dict:
    """a - b by a two-level bootstrap (issue 52's primary question): each resample draws the seeds with
    replacement, then the held-out examples with replacement, both arms on the same draws (paired), so
    the interval counts the test set's luck as well as the seeds'. {"lo", "hi", "se", "level", "resamples"}:
    the percentile interval and the resamples' standard deviation (a standard error of the mean difference)."""
    common = sorted(set(a) & set(b))
    if len(common) < 2:
        return {"lo": None, "hi": None, "se": None, "level": level, "resamples": RESAMPLES}
    sa, sb = np.stack([a[s] for s in common]), np.stack([b[s] for s in common])
    seeds, weights = _draws(len(common), sa.shape[1], np.random.default_rng(BOOT_SEED + 2))
    diff = _resampled(sa, seeds, weights, metric) - _resampled(sb, seeds, weights, metric)
    lo, hi = np.percentile(diff, [50 * (1 - level), 100 - 50 * (1 - level)])
    return {"lo": float(lo), "hi": float(hi), "se": float(diff.std(ddof=1)), "level": level, "resamples": RESAMPLES}


def paired_t(per_seed: list[float]) -> dict:
    """A two-sided paired t test of the per-seed differences against 0: {"t", "p", "df"}."""
    from scipy.stats import t

    v = np.asarray(per_seed, dtype=np.float64)
    sd = v.std(ddof=1) if len(v) > 1 else 0.0
    if len(v) < 2 or sd == 0:
        return {"t": None, "p": None, "df": len(v) - 1}
    stat = float(v.mean() / (sd / np.sqrt(len(v))))
    return {"t": stat, "p": float(2 * t.sf(abs(stat), len(v) - 1)), "df": len(v) - 1}


def holm(ps: dict[str, float | None], alpha: float = 0.05) -> dict[str, dict]:
    """Holm's step-down over the named p values: the smallest tested at alpha / m, the next at
    alpha / (m - 1), ..., stopping at the first kept null. {name: {"level", "rejected", "p_adjusted"}};
    "level" is the confidence level of the name's interval (1 - its step's alpha). A None p is never rejected."""
    order = sorted(ps, key=lambda k: (ps[k] is None, ps[k] or 0.0))
    m, going, out, running = len(order), True, {}, 0.0
    for i, k in enumerate(order):
        step = alpha / (m - i)
        p = ps[k]
        running = max(running, min(1.0, (m - i) * p)) if p is not None else 1.0
        going = going and p is not None and p <= step
        out[k] = {"level": 1 - step, "rejected": going, "p_adjusted": running}
    return out
