"""A fine-tuned classifier (classifier.onnx, written by `python -m training finetune`): a BERT
encoder with a small head, either one answer for the whole text (read at [CLS]) or one per
character. Inputs arrive checked (app/routers/finetunes.py); results are plain dicts."""
from __future__ import annotations

from contextlib import nullcontext

import numpy as np

from ..contract import CLS, FIRST_CHAR, SEP, Vocab, classifier_context
from ..sampling import softmax


class Classifier:
    def __init__(self, session, vocab: Vocab, card: dict, gate=None):
        self.session, self.vocab, self.card = session, vocab, card
        self.gate = gate or nullcontext()
        self.kind: str = card["kind"]
        self.labels: list[str] = list(card["labels"])
        self.context = classifier_context(card)
        self.room = self.context - 2  # [CLS] text [SEP]
        self.inputs = {i.name for i in session.get_inputs()}

    def logits(self, ids: list[int]) -> np.ndarray:
        """(n_labels,) for a whole-input classifier, (len(ids), n_labels) for a per-character one."""
        seq = np.asarray([CLS, *ids, SEP], dtype=np.int64).reshape(1, -1)
        feeds = {"input_ids": seq}
        if "token_type_ids" in self.inputs:
            feeds["token_type_ids"] = np.zeros_like(seq)
        with self.gate:
            (out,) = self.session.run(["logits"], feeds)
        return out[0] if self.kind == "sequence" else out[0, 1:1 + len(ids)]

    def smoke_test(self) -> None:
        """At load (app/registry.py): logits of the card's shape at length 1 and at the full room."""
        for n in sorted({1, self.room}):
            out = self.logits([FIRST_CHAR] * n)
            want = (len(self.labels),) if self.kind == "sequence" else (n, len(self.labels))
            if out.shape != want or not np.isfinite(out).all():
                raise ValueError(f"classifier.onnx gave logits of shape {out.shape} at length {n}, expected {want}")

    def classify(self, text: str) -> dict:
        ids, unknown = self.vocab.encode(text)
        probs = softmax(self.logits(ids).astype(np.float64))
        if self.kind == "sequence":
            best = int(np.argmax(probs))
            return {"kind": "sequence", "labels": self.labels, "probabilities": [float(p) for p in probs],
                    "prediction": self.labels[best], "characters": None, "unknown_chars": unknown}
        chars = []
        for ch, row in zip(text, probs):
            best = int(np.argmax(row))
            chars.append({"char": ch, "probabilities": [float(p) for p in row], "prediction": self.labels[best]})
        return {"kind": "token", "labels": self.labels, "probabilities": None, "prediction": None,
                "characters": chars, "unknown_chars": unknown}
