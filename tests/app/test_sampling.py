"""app/sampling.py: THE sampling rule (temperature, top-k, top-p) and the draw."""
from __future__ import annotations

import numpy as np
import pytest

from app.sampling import draw, entropy, sampling_distribution, softmax


@pytest.fixture
def logits():
    return np.random.default_rng(0).normal(size=40) * 2


def test_greedy_puts_all_mass_on_the_argmax(logits):
    d = sampling_distribution(logits, 0.0, 0, 1.0)
    assert d.greedy and d.kept.sum() == 1
    assert np.argmax(d.final) == np.argmax(logits) and d.final.max() == 1.0
    assert draw(d, np.random.default_rng(1).random()) == np.argmax(logits)
    assert d.entropies["final"] == 0.0 and d.entropies["raw"] > 0


def test_raw_is_softmax_and_temperature_divides_logits(logits):
    d = sampling_distribution(logits, 0.5, 0, 1.0)
    np.testing.assert_allclose(d.raw, softmax(logits))
    np.testing.assert_allclose(d.tempered, softmax(logits / 0.5))
    assert entropy(d.tempered) < entropy(d.raw)  # < 1 sharpens
    assert d.kept.all()
    np.testing.assert_allclose(d.final, d.tempered)


@pytest.mark.parametrize("k", [1, 5, 17])
def test_top_k_keeps_exactly_k_most_likely(logits, k):
    d = sampling_distribution(logits, 1.3, k, 1.0)
    assert (d.final > 0).sum() == k == d.kept.sum()
    assert set(np.flatnonzero(d.kept)) == set(np.argsort(-logits)[:k])
    assert d.final.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(d.final[d.kept], d.tempered[d.kept] / d.tempered[d.kept].sum())


@pytest.mark.parametrize("p", [0.05, 0.3, 0.5, 0.9, 0.999])
def test_top_p_keeps_the_smallest_set_reaching_p(logits, p):
    d = sampling_distribution(logits, 1.0, 0, p)
    kept = np.sort(d.tempered[d.kept])[::-1]
    assert kept.sum() >= p - 1e-12  # reaches p ...
    assert kept[:-1].sum() < p  # ... and one character fewer would not
    # they are the most likely ones
    assert d.tempered[d.kept].min() >= d.tempered[~d.kept].max()


def test_top_k_applies_before_top_p(logits):
    d = sampling_distribution(logits, 1.0, 4, 0.6)
    top4 = np.argsort(-logits)[:4]
    renorm = np.sort(d.tempered[top4])[::-1] / d.tempered[top4].sum()
    expected = int(np.searchsorted(np.cumsum(renorm), 0.6)) + 1  # mass counted within the top 4
    assert d.kept.sum() == expected and set(np.flatnonzero(d.kept)) <= set(top4)


def test_draw_only_returns_kept_chars_and_follows_final(logits):
    d = sampling_distribution(logits, 1.0, 3, 1.0)
    rng = np.random.default_rng(0)
    draws = np.array([draw(d, u) for u in rng.random(3000)])
    assert set(draws) <= set(np.flatnonzero(d.kept))
    freq = np.bincount(draws, minlength=len(logits)) / len(draws)
    np.testing.assert_allclose(freq, d.final, atol=0.03)


def test_uniform_is_the_documented_counter_hash():
    """Pinned values: the same numbers the page's former splitmix32 draw gave (seed 0, i = 0, 1, 2)."""
    from app.sampling import uniform

    assert [uniform(0, i) for i in range(3)] == [0.7882781056687236, 0.6292254757136106, 0.6471460571046919]
    assert 0 <= uniform(2**32 - 1, 10**6) < 1
