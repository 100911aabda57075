"""app/tasks/corruption.py: the selection schemes' statistics (rate within tolerance over many
draws, spans contiguous and apart, whole words whole) and 80/10/10 per unit."""
from __future__ import annotations

import numpy as np
import pytest

from app.contract import FIRST_CHAR, MASK, UNK, Vocab
from app.tasks.corruption import MAX_SPAN, WORD, corrupt, select_units

TEXT = ("Now is the winter of our discontent made glorious summer by this sun of York; and all the clouds "
        "that lour'd upon our house in the deep bosom of the ocean buried.")
VOCAB = Vocab(sorted(set(TEXT) - {"Y"}))  # "Y" is outside it: [UNK] is never selected


def ids():
    return np.asarray(VOCAB.encode(TEXT)[0], dtype=np.int64)


def draws(scheme, rate=0.15, n=400, mean_span=3.0):
    rng = np.random.default_rng(0)
    arr = ids()
    return arr, [select_units(rng, TEXT, arr, scheme, rate, mean_span) for _ in range(n)]


@pytest.mark.parametrize("scheme, tol", [("char", 0.01), ("span", 0.01), ("word", 0.02)])
@pytest.mark.parametrize("rate", [0.15, 0.3])
def test_selected_share_is_the_rate(scheme, tol, rate):
    arr, all_units = draws(scheme, rate)
    n = int((arr >= FIRST_CHAR).sum())
    shares = [sum(len(u) for u in units) / n for units in all_units]
    assert np.mean(shares) == pytest.approx(rate, abs=tol)
    for units in all_units:
        flat = [p for u in units for p in u]
        assert len(flat) == len(set(flat))  # no position twice
        assert all(arr[p] >= FIRST_CHAR for p in flat)  # never [UNK] (or any special)


def test_spans_are_contiguous_runs_apart_from_each_other():
    arr, all_units = draws("span", 0.2, mean_span=3.0)
    lengths = []
    for units in all_units:
        selected = np.zeros(len(arr), dtype=bool)
        for u in units:
            assert u == list(range(u[0], u[0] + len(u))) and 1 <= len(u) <= MAX_SPAN
            selected[u] = True
            lengths.append(len(u))
        # each span is a maximal run: the characters on either side are not selected
        for u in units:
            assert (u[0] == 0 or not selected[u[0] - 1]) and (u[-1] == len(arr) - 1 or not selected[u[-1] + 1])
    assert 2.0 < np.mean(lengths) < 3.5  # geometric with mean 3, cut at 10 and at the budget


def test_whole_words_are_whole():
    arr, all_units = draws("word", 0.15)
    words = {(m.start(), m.end()) for m in WORD.finditer(TEXT)}
    for units in all_units:
        for u in units:
            assert (u[0], u[-1] + 1) in words  # exactly one word of the text, all its characters
    assert "Y" not in [TEXT[u[0]] for units in all_units for u in units]  # "York" holds an [UNK]


def test_80_10_10_applies_per_unit():
    rng = np.random.default_rng(1)
    arr = ids()
    counts = {"mask": 0, "random": 0, "unchanged": 0}
    for _ in range(600):
        units = select_units(rng, TEXT, arr, "word", 0.15, 3.0)
        out, actions = corrupt(rng, arr, units, VOCAB.size)
        for u in units:
            kinds = {actions[p] for p in u}
            assert len(kinds) == 1  # one decision for the whole word
            kind = kinds.pop()
            counts[kind] += 1
            if kind == "mask":
                assert (out[u] == MASK).all()
            elif kind == "unchanged":
                assert (out[u] == arr[u]).all()
            else:
                assert (out[u] >= FIRST_CHAR).all()
        untouched = np.setdiff1d(np.arange(len(arr)), [p for u in units for p in u])
        assert (out[untouched] == arr[untouched]).all()
    total = sum(counts.values())
    assert counts["mask"] / total == pytest.approx(0.8, abs=0.03)
    assert counts["random"] / total == pytest.approx(0.1, abs=0.03)
    assert UNK not in VOCAB.stoi.values()
