"""app/contract/ Vocab, app/tasks (the KV-cached sampler, BERT helpers), app/runtime.py (the shared gate)."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from app.contract import CLS, FIRST_CHAR, MASK, SEP, UNK, Vocab
from app.tasks.gpt import GPT
from app.sampling import softmax


def test_vocab_maps_unknown_chars_to_unk_and_reports_them():
    v = Vocab(["a", "b", " "])
    ids, unknown = v.encode("ab é", offset=3)
    assert ids == [5, 6, 7, UNK]
    assert unknown == [{"position": 6, "char": "é"}]
    assert v.token(MASK) == "[MASK]" and v.size == 8


class SpecialsFirstGPT(GPT):
    """A GPT whose special tokens always have the highest logits (no graph at all)."""

    def __init__(self, vocab):
        super().__init__(None, vocab, {"context": 8, "n_layer": 1, "n_head": 1, "n_embd": 2})

    def step(self, cache, ids, start):
        logits = np.zeros(self.vocab.size, dtype=np.float32)
        logits[:FIRST_CHAR] = 50.0
        return logits


class NoCache:
    def __init__(self, gpt):
        pass


def test_special_tokens_are_never_sampled(monkeypatch):
    monkeypatch.setattr("app.tasks.gpt.CacheBinding", NoCache)
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
    from app.tasks import corruption

    bert = models.bert
    text = "the king and the crown " * 2
    ids, _ = bert.vocab.encode(text)

    def corrupt(rate, seed):  # the one corruption every demo uses, per character as Mask-Fill shows it
        return corruption.demo(bert, text, ids, "char", rate, 3.0, seed)

    a, b = corrupt(0.5, 3), corrupt(0.5, 3)
    assert a == b
    assert a != corrupt(0.5, 4)
    everything = corrupt(1.0, 0)
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

    from app.runtime import FairGate

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

    from app.runtime import FairGate

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
    from app.registry import ModelSet, read_meta
    from app.runtime import Runtime

    m = ModelSet.load(read_meta(tiny_models_dir), Runtime(parallel_runs=3))
    assert m.gpt.gate is m.bert.gate and m.gpt.gate._free == 3
