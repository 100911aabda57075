"""BERT: masked-character prediction, the 80/10/10 corruption demo and next-sentence prediction,
over bert.onnx. Inputs arrive checked (app/routers); results are plain dicts."""
from __future__ import annotations

from contextlib import nullcontext

import numpy as np

from ..contract import CLS, FIRST_CHAR, MASK, PAD, SEP, Vocab
from ..sampling import ranked, softmax


class BERT:
    def __init__(self, session, vocab: Vocab, config: dict, gate=None):
        self.session, self.vocab, self.config = session, vocab, config
        self.gate = gate or nullcontext()
        self.context = int(config["context"])

    def forward(self, ids: list[int], types: list[int] | None = None):
        ids_a = np.asarray(ids, dtype=np.int64).reshape(1, -1)
        types_a = np.zeros_like(ids_a) if types is None else np.asarray(types, dtype=np.int64).reshape(1, -1)
        with self.gate:
            mlm, nsp = self.session.run(None, {"input_ids": ids_a, "token_type_ids": types_a})
        return mlm[0], nsp[0]

    # The attention page (app/tasks/attention.py): BERT reads [CLS] text [SEP] plus `pad` [PAD] slots,
    # every position every other one but the [PAD]s (the padding mask: their columns stay empty).
    def attention_input(self, ids: list[int], pad: int, seed: int) -> tuple[list[int], np.ndarray, dict]:
        """The attention page's view: [CLS] text [SEP] and `pad` [PAD] slots, every non-[PAD] key, one segment."""
        seq = [CLS, *ids, SEP] + [PAD] * pad
        allowed = np.broadcast_to(np.asarray(seq) != PAD, (len(seq), len(seq)))
        return seq, allowed, {"token_type_ids": [0] * len(seq)}

    def served_logits(self, seq: list[int], extra: dict) -> np.ndarray:
        return self.forward(seq)[0]

    def smoke_test(self) -> None:
        """At load (app/registry.py): one run at length 1 and one at the full context."""
        vocab = self.vocab.size
        for n in sorted({1, self.context}):
            out, nsp = self.forward([FIRST_CHAR] * n)
            if out.shape != (n, vocab) or not np.isfinite(out).all():
                raise ValueError(f"bert.onnx gave logits of shape {out.shape} at length {n}, expected ({n}, {vocab})")
            if nsp.shape != (2,):
                raise ValueError(f"bert.onnx gave NSP logits of shape {nsp.shape}, expected (2,)")

    def char_probs(self, ids: list[int], rows: list[int]) -> np.ndarray:
        """[CLS] ids [SEP] -> (len(rows), n_chars): probabilities over the ordinary characters at
        the positions `rows` of ids (only those: the softmax of every row costs as much again
        as the rest of a request's Python work)."""
        mlm, _ = self.forward([CLS, *ids, SEP])
        return softmax(mlm[np.asarray(rows, dtype=np.int64) + 1, FIRST_CHAR:])

    def each_masked(self, ids: list[int]) -> np.ndarray:
        """(len(ids), n_chars): at row i, the probabilities at position i with that one character
        masked (one batch of len(ids) rows, each [CLS] ids [SEP] with its own [MASK])."""
        n = len(ids)
        batch = np.tile(np.asarray([CLS, *ids, SEP], dtype=np.int64), (n, 1))
        batch[np.arange(n), np.arange(n) + 1] = MASK
        with self.gate:
            mlm, _ = self.session.run(None, {"input_ids": batch, "token_type_ids": np.zeros_like(batch)})
        return softmax(mlm[np.arange(n), np.arange(n) + 1, FIRST_CHAR:])

    def ranked(self, probs: np.ndarray, n: int) -> list[dict]:
        return ranked(self.vocab.chars, probs, n)

    # GPT vs BERT (app/tasks/compare.py): BERT reads both sides of a masked position.
    def compare_room(self) -> tuple[int, str | None]:
        return self.context - 2, f"its context of {self.context} minus [CLS] and [SEP]"

    def compare_guess(self, ids: list[int], pos: int) -> tuple[np.ndarray | None, str]:
        masked = list(ids)
        masked[pos] = MASK
        n = len(ids)
        return (self.char_probs(masked, [pos])[0],
                f"{pos} character{'s' if pos != 1 else ''} to the left and {n - pos - 1} to the right")

    def compare_strip(self, ids: list[int]) -> list[float | None]:
        """p(the true character) at every position, with that one masked (one batch row each)."""
        probs = self.each_masked(ids)
        return [float(probs[i, t - FIRST_CHAR]) if t >= FIRST_CHAR else 0.0 for i, t in enumerate(ids)]

    def fill(self, ids: list[int], masks: list[int], top_k: int, originals: list[int] | None = None) -> list[dict]:
        """Predictions at each mask position of `ids` (which already hold [MASK] there)."""
        probs = self.char_probs(ids, masks)
        out = []
        for j, pos in enumerate(masks):
            p = probs[j]
            entry = {"position": pos, "predictions": self.ranked(p, top_k), "original": None}
            if originals is not None and originals[j] >= FIRST_CHAR:
                po = float(p[originals[j] - FIRST_CHAR])
                entry["original"] = {"char": self.vocab.token(originals[j]), "prob": po,
                                     "rank": int((p > po).sum()) + 1}
            out.append(entry)
        return out

    def p_is_next(self, a: list[int], b: list[int]) -> float:
        """[CLS] a [SEP] b [SEP] with segment 0 for [CLS] a [SEP] and 1 for b [SEP]."""
        ids = [CLS, *a, SEP, *b, SEP]
        types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
        _, nsp = self.forward(ids, types)
        return float(softmax(nsp)[0])
