"""The 95 % interval over seeds and the paired difference, on fixed numbers."""
from __future__ import annotations

import math

import pytest

from training.finetune_stats import interval, paired_difference, t_quantile


def test_t_interval_of_three_values():
    r = interval([0.5, 0.6, 0.7])  # mean 0.6, s = 0.1, t(0.975, 2) = 4.303
    half = 4.303 * 0.1 / math.sqrt(3)
    assert r["n"] == 3 and r["mean"] == pytest.approx(0.6)
    assert r["lo"] == pytest.approx(0.6 - half) and r["hi"] == pytest.approx(0.6 + half)
    assert half == pytest.approx(0.24844, abs=1e-5)


def test_t_interval_of_five_values():
    r = interval([0.70, 0.72, 0.74, 0.76, 0.78])  # s = 0.0316228, t(0.975, 4) = 2.776
    assert r["lo"] == pytest.approx(0.74 - 2.776 * 0.0316228 / math.sqrt(5), abs=1e-6)


def test_one_value_has_no_interval_and_none_has_no_mean():
    assert interval([0.8]) == {"mean": 0.8, "lo": None, "hi": None, "n": 1}
    assert interval([])["mean"] is None


def test_equal_values_give_a_zero_width_interval():
    r = interval([0.5, 0.5, 0.5])
    assert r["lo"] == r["hi"] == 0.5


def test_quantiles_beyond_the_table_err_wide():
    assert t_quantile(1) == 12.706 and t_quantile(35) == 2.021 and t_quantile(1000) == 1.960


def test_paired_difference_uses_the_seeds_both_have():
    d = paired_difference({0: 0.8, 1: 0.9, 2: 0.7, 3: 0.99}, {0: 0.5, 1: 0.6, 2: 0.4})
    assert d["seeds"] == [0, 1, 2] and d["mean"] == pytest.approx(0.3)
    assert d["lo"] == pytest.approx(0.3) and d["hi"] == pytest.approx(0.3)
    d = paired_difference({0: 0.8, 1: 0.6, 2: 0.7}, {0: 0.5, 1: 0.5, 2: 0.5})  # differences 0.3, 0.1, 0.2
    assert d["lo"] == pytest.approx(0.2 - 4.303 * 0.1 / math.sqrt(3))
