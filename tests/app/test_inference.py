"""app/inference.py: vocabulary, THE sampling rule, the KV-cached sampler, BERT helpers."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from app.inference import (CLS, FIRST_CHAR, GPT, MASK, SEP, UNK, Vocab, draw, entropy,
                           sampling_distribution, softmax)


@pytest.fixture
def logits():
    return np.random.default_rng(0).normal(size=40) * 2


def test_vocab_maps_unknown_chars_to_unk_and_reports_them():
    v = Vocab(["a", "b", " "])
    ids, unknown = v.encode("ab é", offset=3)
    assert ids == [5, 6, 7, UNK]
    assert unknown == [{"position": 6, "char": "é"}]
    assert v.token(MASK) == "[MASK]" and v.size == 8


def test_greedy_puts_all_mass_on_the_argmax(logits):
    d = sampling_distribution(logits, 0.0, 0, 1.0)
    assert d.greedy and d.kept.sum() == 1
    assert np.argmax(d.final) == np.argmax(logits) and d.final.max() == 1.0
    assert draw(d, np.random.default_rng(1)) == np.argmax(logits)
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
    draws = np.array([draw(d, rng) for _ in range(3000)])
    assert set(draws) <= set(np.flatnonzero(d.kept))
    freq = np.bincount(draws, minlength=len(logits)) / len(draws)
    np.testing.assert_allclose(freq, d.final, atol=0.03)


class SpecialsFirstGPT(GPT):
    """A GPT whose special tokens always have the highest logits (no graph at all)."""

    def __init__(self, vocab):
        super().__init__(None, vocab, {"context": 8, "n_layer": 1, "n_head": 1, "n_embd": 2})

    def step(self, cache, ids, start):
        logits = np.zeros((len(ids), self.vocab.size), dtype=np.float32)
        logits[:, :FIRST_CHAR] = 50.0
        return logits


class NoCache:
    def __init__(self, gpt):
        pass


def test_special_tokens_are_never_sampled(monkeypatch):
    monkeypatch.setattr("app.inference.CacheBinding", NoCache)
    gpt = SpecialsFirstGPT(Vocab(list("abc")))
    tokens = [s.token for s in gpt.generate([5, 6], 30, 5.0, 0, 1.0, seed=0)]
    assert min(tokens) >= FIRST_CHAR
    assert {s.token for s in gpt.generate([5], 3, 0.0, 0, 1.0, seed=0)} == {FIRST_CHAR}  # greedy among chars


class RecordingGPT(GPT):
    """The real GPT, recording (cached length, seq length) of each cached run."""

    calls: list

    def step(self, cache, ids, start):
        self.calls.append((start, len(ids)))
        return super().step(cache, ids, start)


def full_forward(session, ids):
    """Reference: one full forward (no cached characters) straight through onnxruntime."""
    empty = {i.name: np.zeros([1, *i.shape[1:]], dtype=np.float32)  # (batch, n_head, context, head_size)
             for i in session.get_inputs() if i.name.startswith("past_") and i.name != "past_length"}
    return session.run(["logits"], {"input_ids": np.array([ids], dtype=np.int64),
                                    "past_length": np.array(0, dtype=np.int64), **empty})[0][0]


@pytest.mark.parametrize("prompt_len", [10, 100])  # shorter and longer than the context (64)
def test_cached_generation_matches_full_forward_across_reprefill(models, tiny_models_dir, prompt_len):
    gpt = models.gpt
    ctx = gpt.context
    reference = ort.InferenceSession(str(tiny_models_dir / "gpt.onnx"), providers=["CPUExecutionProvider"])
    cached = RecordingGPT(gpt.session, gpt.vocab, gpt.config)
    cached.calls = []
    prompt = list(np.random.default_rng(prompt_len).integers(FIRST_CHAR, gpt.vocab.size, prompt_len))
    steps = list(cached.generate(prompt, 2 * ctx, 1.0, 0, 1.0, seed=5))
    seq = prompt + [s.token for s in steps]
    windows = []
    for i, step in enumerate(steps):
        window = seq[step.window_start: prompt_len + i]
        windows.append(len(window))
        assert 0 < len(window) <= ctx
        ref = full_forward(reference, window)[-1]
        assert np.abs(ref - step.logits).max() <= 1e-4, f"step {i}"
    assert max(windows) == ctx and ctx // 2 in windows[1:]  # the cache filled and was re-prefilled
    assert windows[0] == min(prompt_len, ctx)  # the last part of a long prompt
    # One prefill per (re)start; every other call is a single character at its absolute position.
    prefills = [c for c in cached.calls if c[0] == 0]
    assert len(prefills) == 1 + sum(1 for a, b in zip(windows, windows[1:]) if b < a)
    assert all(length == 1 and start < ctx for start, length in cached.calls if start > 0)
    assert len(cached.calls) == len(steps)


def test_bert_fill_probs_and_nsp(models):
    bert = models.bert
    ids, _ = bert.vocab.encode("the king and the crown")
    masked = list(ids)
    masked[4] = MASK
    [result] = bert.fill(masked, [4], top_k=5, originals=[ids[4]])
    probs = [p["prob"] for p in result["predictions"]]
    assert len(probs) == 5 and probs == sorted(probs, reverse=True)
    orig = result["original"]
    assert orig["char"] == "k" and orig["rank"] >= 1
    if orig["rank"] <= 5:
        assert result["predictions"][orig["rank"] - 1]["char"] == "k"
    p = bert.p_is_next(ids[:5], ids[5:])
    mlm, nsp = bert.forward([CLS, *ids[:5], SEP, *ids[5:], SEP], [0] * 7 + [1] * (len(ids) - 5 + 1))
    assert p == pytest.approx(float(softmax(nsp)[0]))


def test_corruption_is_reproducible_and_follows_the_recipe(models):
    bert = models.bert
    ids, _ = bert.vocab.encode("the king and the crown " * 2)
    a, b = bert.corrupt(ids, 0.5, 3), bert.corrupt(ids, 0.5, 3)
    assert a == b
    assert a != bert.corrupt(ids, 0.5, 4)
    everything = bert.corrupt(ids, 1.0, 0)
    assert len(everything["selected"]) == len(ids)
    actions = [s["action"] for s in everything["selected"]]
    assert 0.6 < actions.count("mask") / len(actions) <= 1.0
    for s in everything["selected"]:
        shown = everything["corrupted"][s["position"]]
        assert shown == s["shown"]
        assert (shown == "[MASK]") == (s["action"] == "mask")
        if s["action"] == "unchanged":
            assert shown == s["original"]


def test_fair_gate_admits_in_arrival_order():
    import threading
    import time

    from app.inference import FairGate

    gate, order = FairGate(1), []
    gate.__enter__()  # hold the only slot while five threads queue up, one after another

    def worker(i):
        with gate:
            order.append(i)

    threads = []
    for i in range(5):
        threads.append(threading.Thread(target=worker, args=(i,)))
        threads[-1].start()
        while len(gate._waiters) < i + 1:
            time.sleep(0.001)
    gate.__exit__(None, None, None)
    for t in threads:
        t.join(5)
    assert order == [0, 1, 2, 3, 4]


def test_fair_gate_limits_concurrent_runs():
    import threading
    import time

    from app.inference import FairGate

    gate, lock, running, peak = FairGate(2), threading.Lock(), [0], [0]

    def worker():
        with gate:
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            time.sleep(0.01)
            with lock:
                running[0] -= 1

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert peak[0] == 2 and gate._free == 2


def test_both_models_share_one_gate(tiny_models_dir):
    from app.inference import Models

    m = Models.load(tiny_models_dir, parallel_runs=3)
    assert m.gpt.gate is m.bert.gate and m.gpt.gate._free == 3
