"""The fine-tune lab's scores (accuracy, F1 of the rarer tags) and bootstrap intervals, on fixed numbers."""
from __future__ import annotations

import numpy as np
import pytest

from training.finetune_stats import clear, interval, paired_difference, score, units
from training.finetune_summary import comparison, summarize


def seq_units(right: list[int]) -> np.ndarray:
    """Whole-input outcomes: 1 = labelled right (gold 0 = majority, always)."""
    return units([0 if r else 1 for r in right], [0] * len(right), "sequence", 0)


def test_accuracy_and_f1_of_the_rarer_tag():
    # per-character: gold tags 0 0 1 0 1 / 1 0 ; the model marks 1 at positions 2 and 3, and nothing on the second
    u = units([[0, 0, 1, 1, 0], [0, 0]], [[0, 0, 1, 0, 1], [1, 0]], "token", 0)
    assert u.tolist() == [[3, 5, 1, 1, 1], [1, 2, 0, 0, 1]]
    assert score(u, "accuracy") == pytest.approx(4 / 7)
    assert score(u, "f1") == pytest.approx(2 * 1 / (2 * 1 + 1 + 2))  # TP 1, FP 1, FN 2
    never = units([[0] * 5, [0, 0]], [[0, 0, 1, 0, 1], [1, 0]], "token", 0)
    assert score(never, "accuracy") == pytest.approx(4 / 7) and score(never, "f1") == 0.0  # always-majority: F1 0
    cut = units([[0, 1]], [[0, 1, -100]], "token", 0)  # characters past the context are not scored
    assert cut.tolist() == [[2, 2, 1, 0, 0]]


def test_intervals_stay_inside_0_and_100_percent():
    perfect = [seq_units([1] * 20) for _ in range(5)]
    r = interval(perfect, "accuracy")
    assert r == {"mean": 1.0, "lo": 1.0, "hi": 1.0, "n": 5}
    rng = np.random.default_rng(0)
    near = [seq_units((rng.random(30) < 0.97).astype(int).tolist()) for _ in range(3)]
    r = interval(near, "accuracy")
    assert 0.0 <= r["lo"] <= r["mean"] <= r["hi"] <= 1.0 and r["lo"] < r["mean"]
    low = [seq_units((rng.random(30) < 0.03).astype(int).tolist()) for _ in range(3)]
    r = interval(low, "accuracy")
    assert 0.0 <= r["lo"] <= r["mean"] <= r["hi"] <= 1.0


def test_one_seed_still_has_an_interval_from_the_held_out_examples():
    r = interval([seq_units([1] * 15 + [0] * 15)], "accuracy")
    assert r["n"] == 1 and r["mean"] == 0.5
    assert 0.3 < r["lo"] < 0.45 and 0.55 < r["hi"] < 0.7  # about +-18 points for 30 examples
    assert interval([], "accuracy")["mean"] is None


def test_the_interval_is_reproducible_and_widens_with_seed_spread():
    steady = [seq_units([1] * 70 + [0] * 30) for _ in range(5)]
    spread = [seq_units([1] * k + [0] * (100 - k)) for k in (50, 60, 70, 80, 90)]
    a, b = interval(steady, "accuracy"), interval(spread, "accuracy")
    assert a == interval(steady, "accuracy") and a["mean"] == pytest.approx(b["mean"])
    assert b["hi"] - b["lo"] > a["hi"] - a["lo"]


def test_the_paired_difference_uses_the_same_seeds_and_examples():
    a = {s: seq_units([1] * 90 + [0] * 10) for s in range(5)}
    b = {s: seq_units([1] * 60 + [0] * 40) for s in range(5)}
    d = paired_difference(a, b, "accuracy")
    assert d["mean"] == pytest.approx(0.3) and d["seeds"] == [0, 1, 2, 3, 4] and clear(d)
    assert -1.0 <= d["lo"] <= d["hi"] <= 1.0 and d["lo"] > 0.15
    same = paired_difference(a, {s: a[s].copy() for s in range(3)}, "accuracy")
    assert same["mean"] == 0.0 and same["lo"] == same["hi"] == 0.0 and same["n"] == 3 and not clear(same)


def result(arm, size, seed, u, same=False, steps=10):
    return {"arm": arm, "size": size, "seed": seed, "same_answer": same, "steps": steps}, u


def test_the_headline_names_the_smallest_clear_size_or_says_none_is():
    good, bad = seq_units([1] * 90 + [0] * 10), seq_units([1] * 50 + [0] * 50)
    noisy = {s: seq_units([1] * (50 + 10 * (s % 2)) + [0] * (50 - 10 * (s % 2))) for s in range(3)}
    outcomes = []
    for s in range(3):
        outcomes += [result("full", 8, s, noisy[s]), result("scratch", 8, s, noisy[(s + 1) % 3], same=True),
                     result("full", 32, s, good), result("scratch", 32, s, bad, same=True)]
    out = summarize(outcomes, ["full", "scratch"], [8, 32], "accuracy")
    assert set(out["results"]) == {"full", "scratch"} and set(out["results"]["full"]) == {"8", "32"}
    assert set(out["results"]["full"]["32"]) == {"mean", "lo", "hi", "n"}
    head = out["headline"]["comparisons"][0]
    assert head["of"] == ["full", "scratch"] and head["size"] == "32"
    assert "With 32 labelled examples" in out["headline"]["text"] and "40.0 points of accuracy above" in out["headline"]["text"]
    assert out["same_answer"]["scratch"] == {"8": 3, "32": 3} and out["steps"]["full"]["8"] == 10
    assert out["difference"]["by_size"]["32"]["mean"] == pytest.approx(0.4)
    none = comparison("scratch", {"8": out["differences"]["scratch"]["8"]}, ["8"], "accuracy")
    assert none["size"] is None and "no size shows a difference yet: add seeds or examples" in none["text"]
