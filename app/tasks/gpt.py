"""GPT: next-character logits and KV-cached sampling over gpt.onnx's decoding graph.

Sampling uses THE rule in app/sampling.py and one random stream: the i-th generated character
is drawn with uniform(seed, i), so stepping one character at a time (/api/next-token with
`generated`), /api/generate and the stream give the same text for the same prompt, knobs and seed.
(Stepping reads full forwards, generation its KV cache: the logits agree to ~1e-5, so a draw could
differ only where u falls that close to a boundary of the cumulative distribution.)
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

from ..contract import FIRST_CHAR, Vocab, cache_names, cache_shape
from ..sampling import Distribution, draw, sampling_distribution, softmax, uniform

# Characters sampled per turn at the shared gate: a generation waits its turn once per chunk,
# not once per character, so under a flood of one-run requests (mask-fill) it keeps a fair share.
# Measured (benchmarks.serving's open-loop mix at 50 req/s, 2 cores, runs interleaved): generate's p99
# was 2.9-3.3x mask-fill's with 8, 2.3-2.5x with 16, 1.9-2.3x with 32, and mask-fill's own p99
# no worse with 32 (a 32-character turn is ~12 ms of one core, about two mask-fills).
CHUNK = 32


@dataclass
class Step:
    """One generated character: its id, the distribution it was drawn from, the uniform number
    that drew it, and (for tests and the benchmark) the logits and where the window started."""

    token: int
    dist: Distribution
    u: float
    logits: np.ndarray
    window_start: int


def window_start(n_prompt: int, generated: int, context: int) -> int:
    """Where the window that predicts character `generated` starts, as an index into prompt +
    generated text, by the rule `GPT.generate` follows: the last `context` prompt characters,
    then one more per character until the window is full; then (positions are learned and
    absolute, so a full cache cannot slide) it restarts from the last context // 2 characters."""
    length = min(n_prompt, context)
    start = n_prompt - length
    for _ in range(generated):
        length += 1
        if length > context:
            start += length - context // 2
            length = context // 2
    return start


class CacheBinding:
    """One generation's KV cache: a fixed buffer per layer and kind, bound (onnxruntime IOBinding)
    both as gpt.onnx's past_* input and as its present_* output, so a step writes the new
    character's keys and values in place instead of copying the whole cache. The logits are
    bound to a buffer of ours too, so a step allocates nothing."""

    def __init__(self, gpt: "GPT"):
        self.gpt = gpt
        shape = cache_shape(gpt.config)
        self.buffers = [np.zeros(shape, dtype=np.float32) for _ in gpt.cache_names]
        self.io = gpt.session.io_binding()
        for name, buf in zip(gpt.cache_names, self.buffers):
            self.io.bind_input(name, "cpu", 0, np.float32, shape, buf.ctypes.data)
            self.io.bind_output(name.replace("past_", "present_", 1), "cpu", 0, np.float32, shape, buf.ctypes.data)
        self.logits = np.empty((1, 0, gpt.vocab.size), dtype=np.float32)
        self.past_length = np.zeros((), dtype=np.int64)
        self.io.bind_cpu_input("past_length", self.past_length)
        self.ids = np.empty((1, 0), dtype=np.int64)

    def run(self, ids: list[int], start: int) -> np.ndarray:
        """Logits (seq, vocab) for `ids` at positions start.., after `start` cached characters.
        The array is reused by the next run: copy what must outlive it. The caller holds the gate."""
        if len(ids) != self.ids.shape[1]:  # a new length (prefill vs step): new buffers to bind
            self.ids = np.empty((1, len(ids)), dtype=np.int64)
            self.logits = np.empty((1, len(ids), self.gpt.vocab.size), dtype=np.float32)
            self.io.bind_cpu_input("input_ids", self.ids)
            self.io.bind_output("logits", "cpu", 0, np.float32, list(self.logits.shape), self.logits.ctypes.data)
        self.ids[0] = ids
        self.past_length[()] = start
        self.gpt.session.run_with_iobinding(self.io)
        return self.logits[0]


class GPT:
    def __init__(self, session, vocab: Vocab, config: dict, gate=None):
        self.session, self.vocab, self.config = session, vocab, config
        self.gate = gate or nullcontext()
        self.context = int(config["context"])
        self.cache_names = cache_names(int(config["n_layer"]))
        # One read-only empty cache serves every full forward (past_length 0: nothing is read from it).
        empty = np.zeros(cache_shape(config), dtype=np.float32)
        self._empty = dict.fromkeys(self.cache_names, empty)

    def logits(self, ids: list[int] | np.ndarray) -> np.ndarray:
        """Logits (seq, vocab) of one full forward over `ids` (at most `context` of them)."""
        ids = np.asarray(ids, dtype=np.int64).reshape(1, -1)
        if ids.shape[1] > self.context:  # the graph does not check this itself
            raise ValueError("GPT input past the context")
        with self.gate:
            logits = self.session.run(["logits"], {"input_ids": ids, "past_length": np.array(0, dtype=np.int64),
                                                   **self._empty})[0]
        return logits[0]

    # The attention page (app/tasks/attention.py): GPT reads the text as it is, each position the
    # ones before it and itself (the causal mask: the lower triangle).
    def attention_input(self, ids: list[int], pad: int, seed: int) -> tuple[list[int], np.ndarray, dict]:
        """The attention page's view (app/tasks/attention.py): what it reads, who may look at whom,
        and the other inputs of its graph (none: the text, causal)."""
        return list(ids), np.tril(np.ones((len(ids), len(ids)), dtype=bool)), {}

    def served_logits(self, seq: list[int], extra: dict) -> np.ndarray:
        return self.logits(seq)

    def smoke_test(self) -> None:
        """At load (app/registry.py): a full forward at length 1 and at the full context, and the
        cached decoding path generation uses, so a bad graph fails there, not on every request."""
        vocab = self.vocab.size
        for n in sorted({1, self.context}):
            out = self.logits([FIRST_CHAR] * n)
            if out.shape != (n, vocab) or not np.isfinite(out).all():
                raise ValueError(f"gpt.onnx gave logits of shape {out.shape} at length {n}, expected ({n}, {vocab})")
        if len(list(self.generate([FIRST_CHAR], 2, 1.0, 0, 1.0, 0))) != 2:
            raise ValueError("gpt.onnx's cached decoding did not generate")

    def next_logits(self, ids: list[int], generated: int = 0) -> tuple[np.ndarray, int]:
        """Logits for the character after `ids` (whose last `generated` were sampled), read from
        the window generation would read there; and how many characters that window holds."""
        start = window_start(len(ids) - generated, generated, self.context)
        window = ids[start:]
        return self.logits(window)[-1], len(window)

    # GPT vs BERT (app/tasks/compare.py): GPT reads only what is left of a position.
    def compare_room(self) -> tuple[int, str | None]:
        return self.context, None  # a longer text: it reads the last `context` characters before a position

    def compare_guess(self, ids: list[int], pos: int) -> tuple[np.ndarray | None, str]:
        if pos == 0:
            return None, "nothing: there is no character to the left of position 0"
        logits, used = self.next_logits(ids[:pos])
        return softmax(logits[FIRST_CHAR:]), f"the {used} character{'s' if used != 1 else ''} to the left"

    def compare_strip(self, ids: list[int]) -> list[float | None]:
        """p(true character i | the ones before it) at every i, from one forward over the text (row i - 1)."""
        if len(ids) < 2:
            return [None] * len(ids)
        probs = softmax(self.logits(ids[:self.context])[:, FIRST_CHAR:])
        return [float(probs[i - 1, t - FIRST_CHAR]) if t >= FIRST_CHAR and 0 < i <= probs.shape[0] else None
                for i, t in enumerate(ids)]

    def step(self, cache: CacheBinding, ids: list[int], start: int) -> np.ndarray:
        """One cached run of `ids` after the `start` characters in `cache`: the logits (vocab,)
        for the character that follows them (a copy: the binding reuses its buffer)."""
        if start + len(ids) > self.context:
            raise ValueError("GPT input past the context")
        return cache.run(ids, start)[-1].copy()

    def generate(self, ids: list[int], max_new: int, temperature: float, top_k: int, top_p: float,
                 seed: int) -> Iterator[Step]:
        """Sample max_new characters after `ids`, one cached step each, CHUNK steps per turn at
        the gate (computed inside the turn, yielded after it: a slow consumer never holds the gate).

        The prompt (its last `context` characters) is prefilled once; each new character is one
        forward of length 1 at its absolute position; a full window restarts (window_start)."""
        cache = CacheBinding(self)
        seq = list(ids[-self.context:])
        offset = len(ids) - len(seq)  # window start, as an index into prompt + generated
        logits = None
        i = 0
        while i < max_new:
            chunk = []
            with self.gate:
                if logits is None:
                    logits = self.step(cache, seq, 0)
                for _ in range(min(CHUNK, max_new - i)):
                    dist = sampling_distribution(logits[FIRST_CHAR:], temperature, top_k, top_p)
                    u = uniform(seed, i)
                    token = FIRST_CHAR + draw(dist, u)
                    chunk.append(Step(token, dist, u, logits, offset))
                    i += 1
                    if i == max_new:
                        break
                    seq.append(token)
                    if len(seq) > self.context:
                        keep = self.context // 2
                        offset += len(seq) - keep
                        seq = seq[-keep:]
                        logits = self.step(cache, seq, 0)
                    else:
                        logits = self.step(cache, seq[-1:], len(seq) - 1)
            yield from chunk
