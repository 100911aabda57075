"""Mean and 95 % interval over seeds (Student's t), and the paired difference of two arms.

With n seeds the interval is mean +- t(0.975, n - 1) * s / sqrt(n), s the sample standard
deviation. Plain Python (the two-sided 97.5 % quantiles of t are tabulated for 1..30 degrees of
freedom; beyond 30 the next tabulated value is used, which errs on the wide side).
"""
from __future__ import annotations

import math

# t(0.975, df) for df = 1 .. 30, then 40, 60, 120, infinity
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093,
        20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048,
        29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def t_quantile(df: int) -> float:
    if df < 1:
        raise ValueError("an interval needs at least two values")
    if df in T975:
        return T975[df]
    return next((T975[k] for k in sorted(T975) if k >= df), 1.960)


def interval(values: list[float]) -> dict:
    """{"mean", "lo", "hi", "n"}; with one value lo and hi are None (no interval from one seed)."""
    n = len(values)
    if n == 0:
        return {"mean": None, "lo": None, "hi": None, "n": 0}
    mean = sum(values) / n
    if n == 1:
        return {"mean": mean, "lo": None, "hi": None, "n": 1}
    s = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(n - 1) * s / math.sqrt(n)
    return {"mean": mean, "lo": mean - half, "hi": mean + half, "n": n}


def paired_difference(a: dict[int, float], b: dict[int, float]) -> dict:
    """a - b paired by seed (only seeds both have): the interval of the per-seed differences."""
    seeds = sorted(set(a) & set(b))
    return interval([a[s] - b[s] for s in seeds]) | {"seeds": seeds}
