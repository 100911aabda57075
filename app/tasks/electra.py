"""ELECTRA's discriminator over electra.onnx: for each character of `[CLS] text [SEP]`, the
probability that it was replaced. And the generator's step of ELECTRA's recipe, done with the
set's BERT: mask the chosen positions, fill EVERY one with a character drawn from BERT's guess
(the app's seeded stream), so the discriminator judges a text a masked language model repaired."""
from __future__ import annotations

from contextlib import nullcontext

import numpy as np

from ..contract import CLS, FIRST_CHAR, MASK, SEP, Vocab, uniform


class ELECTRA:
    def __init__(self, session, vocab: Vocab, config: dict, gate=None):
        self.session, self.vocab, self.config = session, vocab, config
        self.gate = gate or nullcontext()
        self.context = int(config["context"])

    def forward(self, ids: list[int]) -> np.ndarray:
        """(len(ids),) replaced-logits of ids as one segment (no [CLS]/[SEP] added)."""
        ids_a = np.asarray(ids, dtype=np.int64).reshape(1, -1)
        with self.gate:
            (logits,) = self.session.run(None, {"input_ids": ids_a, "token_type_ids": np.zeros_like(ids_a)})
        return logits[0]

    def smoke_test(self) -> None:
        """At load (app/registry.py): one run at length 1 and one at the full context, so a card whose
        context disagrees with the graph, or a graph with the wrong output shape, fails there."""
        for n in sorted({1, self.context}):
            out = self.forward([FIRST_CHAR] * n)
            if out.shape != (n,) or not np.isfinite(out).all():
                raise ValueError(f"electra.onnx gave replaced_logits of shape {out.shape} at length {n}, expected ({n},)")

    def replaced_probs(self, ids: list[int]) -> np.ndarray:
        """P(replaced) at each character of [CLS] ids [SEP]."""
        z = self.forward([CLS, *ids, SEP])[1:-1].astype(np.float64)
        return 1.0 / (1.0 + np.exp(-z))


def generator_fill(bert, ids: list[int], positions: list[int], seed: int) -> list[int]:
    """ids with every position in `positions` masked and then filled by one draw from BERT's
    distribution over the ordinary characters there (inverse CDF with uniform(seed, position))."""
    masked = list(ids)
    for p in positions:
        masked[p] = MASK
    if not positions:
        return masked
    probs = bert.char_probs(masked, positions)  # (len(positions), n_chars)
    out = list(ids)
    for j, p in enumerate(positions):
        cdf = np.cumsum(probs[j])
        k = int(np.searchsorted(cdf, uniform(seed, p) * cdf[-1], side="right"))
        out[p] = FIRST_CHAR + min(k, len(cdf) - 1)
    return out
