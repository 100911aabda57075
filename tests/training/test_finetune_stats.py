"""The fine-tune lab's scores (accuracy, F1 of the rarer tags) and bootstrap intervals, on fixed numbers."""
from __future__ import annotations

import numpy as np
import pytest

from training.finetune.stats import METHOD, clear, corrected, interval, paired_difference, score, units
from training.finetune.summary import summarize


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
    assert r == {"mean": 1.0, "lo": 1.0, "hi": 1.0, "n": 5, "per_seed": [1.0] * 5}
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


def test_the_interval_is_students_t_over_the_seeds():
    steady = [seq_units([1] * 70 + [0] * 30) for _ in range(5)]
    spread = [seq_units([1] * k + [0] * (100 - k)) for k in (50, 60, 70, 80, 90)]
    a, b = interval(steady, "accuracy"), interval(spread, "accuracy")
    assert a["lo"] == a["hi"] == pytest.approx(0.7)  # every seed the same: no seed-level spread
    # mean 0.7, sd 0.158, t(0.975, 4) = 2.776: 0.7 -+ 0.196 (a bootstrap over 5 seeds would stay inside 0.5..0.9)
    assert b["mean"] == pytest.approx(0.7) and b["lo"] == pytest.approx(0.5037, abs=1e-3) and b["hi"] == pytest.approx(0.8963, abs=1e-3)
    three = interval([seq_units([1] * k + [0] * (100 - k)) for k in (51, 57, 59)], "accuracy")
    assert three["lo"] < 0.51 and three["hi"] > 0.59  # the t interval reaches past the seeds' extremes
    assert "Student's t over seeds" in METHOD and "Bonferroni" in METHOD


def test_the_paired_difference_is_t_over_per_seed_differences_and_corrects_for_m():
    a = {s: seq_units([1] * 90 + [0] * 10) for s in range(5)}
    b = {s: seq_units([1] * 60 + [0] * 40) for s in range(5)}
    d = paired_difference(a, b, "accuracy")
    assert d["mean"] == pytest.approx(0.3) and d["seeds"] == [0, 1, 2, 3, 4]
    assert d["lo"] == d["hi"] and not clear(d)  # every seed +30: an interval of zero width is never a claim (issue 42)
    assert clear({**d, "per_seed": [0.28, 0.3, 0.32, 0.29, 0.31], "lo": 0.28, "hi": 0.32})
    same = paired_difference(a, {s: a[s].copy() for s in range(3)}, "accuracy")
    assert same["mean"] == 0.0 and same["lo"] == same["hi"] == 0.0 and same["n"] == 3 and not clear(same)
    # per-seed differences +3.2, +7.9, +1.1 (issue 32): t interval -4.6 .. +12.7, not clear
    noisy = {"per_seed": [0.032, 0.079, 0.011]}
    c = corrected(noisy, 1)
    assert c["lo"] == pytest.approx(-0.046, abs=2e-3) and c["hi"] == pytest.approx(0.127, abs=2e-3)
    wide = corrected({"per_seed": [0.10, 0.12, 0.14, 0.11, 0.13]}, 8)
    narrow = corrected({"per_seed": [0.10, 0.12, 0.14, 0.11, 0.13]}, 1)
    assert wide["lo"] < narrow["lo"] and wide["level"] == pytest.approx(1 - 0.05 / 8)
    assert not clear({"lo": 0.01, "hi": 0.2, "corrected": {"lo": -0.01, "hi": 0.3}})  # the corrected one decides


def result(arm, size, seed, u, same=False, steps=10):
    return {"arm": arm, "size": size, "seed": seed, "same_answer": same, "steps": steps}, u


def test_the_headline_counts_its_comparisons_and_claims_only_what_survives_the_correction():
    good, bad = seq_units([1] * 90 + [0] * 10), seq_units([1] * 50 + [0] * 50)
    noisy = {s: seq_units([1] * (50 + 10 * (s % 2)) + [0] * (50 - 10 * (s % 2))) for s in range(3)}
    outcomes = [result("readout", 0, 0, bad)]
    for s in range(3):
        outcomes += [result("full", 8, s, noisy[s]), result("scratch", 8, s, noisy[(s + 1) % 3], same=True),
                     result("full", 32, s, seq_units([1] * (88 + s) + [0] * (12 - s))),
                     result("scratch", 32, s, bad, same=True)]
    out = summarize(outcomes, ["readout", "full", "scratch"], [8, 32], "accuracy", {"score": 0.5})
    assert set(out["results"]) == {"readout", "full", "scratch"} and set(out["results"]["full"]) == {"8", "32"}
    assert out["results"]["readout"]["0"]["mean"] == 0.5 and out["results"]["readout"]["8"]["n"] == 0
    assert out["interval"] == METHOD
    assert out["readout"]["text"].startswith("Before any label, the model already scores 50.0 accuracy")
    head = out["headline"]
    assert head["m"] == 2 and head["compared"] == {"arms": ["scratch"], "sizes": ["8", "32"]}  # readout has no 8 or 32
    assert [c["size"] for c in head["comparisons"]] == ["32"] and "2 comparisons" in head["text"]
    assert "interval corrected for 2 comparisons" in head["text"] and "With 32 labelled examples" in head["text"]
    assert out["same_answer"]["scratch"] == {"8": 3, "32": 3} and out["steps"]["full"]["8"] == 10
    assert out["difference"]["by_size"]["32"]["mean"] == pytest.approx(0.39)
    assert not clear(out["differences"]["scratch"]["8"])
    flat = summarize(outcomes[:1] + [o for o in outcomes if o[0]["size"] == 8], ["readout", "full", "scratch"], [8],
                     "accuracy")
    assert flat["headline"]["comparisons"] == [] and "none shows a difference" in flat["headline"]["text"]
