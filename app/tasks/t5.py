"""T5 over t5.onnx (training/t5.py): span corruption as a prefix LM. The input is the line with each
hidden span replaced by a sentinel, then [SEP]; T5 writes each sentinel followed by its span, and
[SEP] when it is done. Its sentinels are ids after the shared vocabulary's (vocab.size + k,
T5_SENTINELS of them, app/contract/families.py). Inputs arrive checked; results are plain dicts."""
from __future__ import annotations

from contextlib import nullcontext

import numpy as np

from ..contract import FIRST_CHAR, SEP, Vocab
from ..contract.families import T5_SENTINELS
from ..sampling import softmax


class T5:
    def __init__(self, session, vocab: Vocab, config: dict, gate=None):
        self.session, self.vocab, self.config = session, vocab, config
        self.gate = gate or nullcontext()
        self.context = int(config["context"])

    def sentinel(self, k: int) -> int:
        return self.vocab.size + k

    def logits(self, ids: list[int], prefix: int) -> np.ndarray:
        """(len(ids), vocab + sentinels): the first `prefix` ids read both ways, the rest left to right."""
        ids_a = np.asarray(ids, dtype=np.int64).reshape(1, -1)
        mask = (np.arange(len(ids)) < prefix).astype(np.int64).reshape(1, -1)
        with self.gate:
            (out,) = self.session.run(None, {"input_ids": ids_a, "prefix_mask": mask})
        return out[0]

    def smoke_test(self) -> None:
        """At load (app/registry.py): one run at length 1 and one at the full context."""
        width = self.vocab.size + T5_SENTINELS
        for n in sorted({1, self.context}):
            out = self.logits([FIRST_CHAR] * n, n // 2)
            if out.shape != (n, width) or not np.isfinite(out).all():
                raise ValueError(f"t5.onnx gave logits of shape {out.shape} at length {n}, expected ({n}, {width})")

    def corrupted(self, ids: list[int], spans: list[tuple[int, int]]) -> list[int]:
        """The prefix: ids with each span [start, end) replaced by its sentinel, then [SEP]."""
        out, last = [], 0
        for k, (start, end) in enumerate(spans):
            out += [*ids[last:start], self.sentinel(k)]
            last = end
        return [*out, *ids[last:], SEP]

    def attention_input(self, ids: list[int], pad: int, seed: int) -> tuple[list[int], np.ndarray, dict]:
        """The attention page's view: up to 3 characters from a third of the way in hidden behind ⟨0⟩,
        and written back after [SEP]: the prefix (the line as read, and [SEP]) looks both ways, what
        is written after it looks left (static/families/t5.js draws the same)."""
        start = len(ids) // 3
        span = (start, min(len(ids), start + 3))
        prefix = self.corrupted(ids, [span])
        seq = [*prefix, self.sentinel(0), *ids[span[0]:span[1]]]
        inside = np.arange(len(seq)) < len(prefix)
        allowed = np.tril(np.ones((len(seq), len(seq)), dtype=bool)) | (inside[:, None] & inside[None, :])
        return seq, allowed, {"prefix_mask": inside.astype(np.int64).tolist()}

    def served_logits(self, seq: list[int], extra: dict) -> np.ndarray:
        return self.logits(seq, sum(extra["prefix_mask"]))

    def write(self, ids: list[int], spans: list[tuple[int, int]], limit: int) -> list[dict]:
        """Greedy: what T5 writes for each span, each character with its probability (the
        distribution over the ordinary characters and the sentinels, as the model gives it)."""
        line = Writing(self.corrupted(ids, spans), len(spans), self.vocab.size, self.context, limit)
        while line.open:
            line.take(softmax(self.logits(line.seq, line.prefix_len)[-1]))
        return [{"span": k, "start": s, "end": e, "truth": "".join(self.vocab.token(t) for t in ids[s:e]),
                 "written": [{"char": self.vocab.token(t), "prob": p} for t, p in line.written[k]]}
                for k, (s, e) in enumerate(spans)]


class Writing:
    """One line being written back greedily: THE rule of what T5 writes, shared by the page (T5.write
    above) and the held-out evaluation (training/t5_free.py), so the card's free-running
    figure measures what a student sees. Feed it the model's distribution after `seq`, one step at a
    time, while `open`: it appends the likeliest token; a sentinel ⟨k⟩ starts span k, a character
    goes to the span last started, [SEP] ends the writing. It stops at the context, at [SEP], or once
    the characters written plus the spans reach `limit` (the page's: hidden + spans + 8)."""

    def __init__(self, prefix: list[int], n_spans: int, vocab_size: int, context: int, limit: int):
        self.seq, self.prefix_len = list(prefix), len(prefix)
        self.n_spans, self.vocab_size, self.context, self.limit = n_spans, vocab_size, context, limit
        self.written: list[list[tuple[int, float]]] = [[] for _ in range(n_spans)]  # (token, probability)
        self.span, self.closed = -1, False

    @property
    def open(self) -> bool:
        return (not self.closed and len(self.seq) < self.context
                and sum(map(len, self.written)) + self.n_spans < self.limit)

    def take(self, p: np.ndarray) -> None:
        token = int(p.argmax())
        self.seq.append(token)
        if token == SEP:
            self.closed = True
        elif token >= self.vocab_size:
            self.span = token - self.vocab_size
        elif 0 <= self.span < self.n_spans and token >= FIRST_CHAR:
            self.written[self.span].append((token, float(p[token])))

    def chars(self, k: int) -> list[int]:
        """The characters written for span k."""
        return [t for t, _ in self.written[k]]
