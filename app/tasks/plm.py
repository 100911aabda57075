"""PLM over plm.onnx (training/plm.py): permutation language modelling, XLNet's two streams as one
sequence. The input is the line's characters, then one query ([MASK]) per position to guess, each at
that position's position id; `ranks` carries the factorization order (2 r + 1 for the character at
place r, 2 r for the query of the position at place r), from which the graph builds its mask.
Inputs arrive checked; results are plain dicts."""
from __future__ import annotations

from contextlib import nullcontext

import numpy as np

from ..contract import FIRST_CHAR, MASK, Vocab, shuffled
from ..sampling import softmax


def predicted_count(length: int) -> int:
    """How many places of an order are guessed: the last 15 % (at least one), as in training (training/plm.py)."""
    return max(1, round(length * 0.15))


class PLM:
    def __init__(self, session, vocab: Vocab, config: dict, gate=None):
        self.session, self.vocab, self.config = session, vocab, config
        self.gate = gate or nullcontext()
        self.context = int(config["context"])

    def logits(self, ids: list[int], position_ids: list[int], ranks: list[int]) -> np.ndarray:
        feeds = {name: np.asarray(v, dtype=np.int64).reshape(1, -1)
                 for name, v in (("input_ids", ids), ("position_ids", position_ids), ("ranks", ranks))}
        with self.gate:
            (out,) = self.session.run(None, feeds)
        return out[0]

    def smoke_test(self) -> None:
        """At load (app/registry.py): one run at length 1 and one at the full context."""
        for n in sorted({1, self.context}):
            out = self.logits([FIRST_CHAR] * n, list(range(n)), [2 * i + 1 for i in range(n)])
            if out.shape != (n, self.vocab.size) or not np.isfinite(out).all():
                raise ValueError(f"plm.onnx gave logits of shape {out.shape} at length {n}, expected ({n}, {self.vocab.size})")

    def attention_input(self, ids: list[int], pad: int, seed: int) -> tuple[list[int], np.ndarray, dict]:
        """The attention page's view: the line's characters (the content stream) in the order
        shuffled(len, seed), and one [MASK] query for each of the last 15 % of that order (the query
        stream); static/families/plm.js draws the same."""
        order = shuffled(len(ids), seed)
        n = predicted_count(len(ids))
        seq, positions, ranks = self.streams(ids, order, n)
        r = np.asarray(ranks)
        allowed = ((r[None, :] % 2 == 1) & (r[None, :] <= r[:, None])) | np.eye(len(seq), dtype=bool)
        return seq, allowed, {"position_ids": positions, "ranks": ranks}

    def served_logits(self, seq: list[int], extra: dict) -> np.ndarray:
        return self.logits(seq, extra["position_ids"], extra["ranks"])

    @staticmethod
    def streams(ids: list[int], order: list[int], n: int) -> tuple[list[int], list[int], list[int]]:
        """(input ids, position ids, ranks) of the two streams for `order`, its last n places guessed."""
        place = {pos: r for r, pos in enumerate(order)}
        targets = order[len(order) - n:]
        seq = [*ids, *[MASK] * n]
        positions = [*range(len(ids)), *targets]
        ranks = [*(2 * place[i] + 1 for i in range(len(ids))), *(2 * place[t] for t in targets)]
        return seq, positions, ranks

    def guess(self, ids: list[int], order: list[int], n: int) -> list[dict]:
        """The last `n` positions of `order` (a permutation of the positions), each guessed from the
        characters earlier in the order: the distribution over the ordinary characters there."""
        targets = order[len(order) - n:]
        out = self.logits(*self.streams(ids, order, n))
        return [{"position": t, "probs": softmax(out[len(ids) + k, FIRST_CHAR:])} for k, t in enumerate(targets)]
