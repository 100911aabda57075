"""Real attention weights: the inspection graphs (<family>.attn.onnx, see training/inspect_export.py).

The served graphs keep their attention inside fused nodes; the inspection graph of the same
weights returns every layer's softmax(q k^T / sqrt(hs) + mask) as outputs, plus the logits, which
are compared with the served graph's logits on every request: the page shows that the weights it
draws belong to the model that answers the other applets (a stale or foreign inspection graph
would show up as a large difference, and is refused)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ApiError

# An inspection graph whose logits differ from the served model's by more than this is not the
# same model (exports agree to ~3e-5 on the shipped models).
AGREEMENT = 1e-3


class Inspector:
    """One inspection graph: ids -> (logits, weights (n_layer, n_head, seq, seq))."""

    def __init__(self, session, family: str, n_layer: int, gate):
        self.session, self.family, self.n_layer, self.gate = session, family, n_layer, gate
        self.inputs = [i.name for i in session.get_inputs()]  # an encoder's graph also takes token_type_ids
        names = [o.name for o in session.get_outputs()]
        expected = ["logits", *[f"attn_{i}" for i in range(n_layer)]]
        if names != expected:
            raise ValueError(f"{family}.attn.onnx outputs {names}, expected {expected}")

    def run(self, ids: list[int], extra: dict) -> tuple[np.ndarray, np.ndarray]:
        """extra: the graph's other inputs by name (its task's attention_input: segments, a prefix, an order)."""
        missing = [name for name in self.inputs[1:] if name not in extra]
        if missing:
            raise ValueError(f"{self.family}.attn.onnx takes {missing}, which its task does not give")
        feeds = {name: np.asarray(ids if name == "input_ids" else extra[name], dtype=np.int64).reshape(1, -1)
                 for name in self.inputs}
        with self.gate:
            logits, *weights = self.session.run(None, feeds)
        return logits[0], np.stack([w[0] for w in weights])


def has_graph(models, family: str) -> bool:
    return (Path(models.meta.folder) / f"{family}.attn.onnx").exists()


def inspector(models, family: str, runtime) -> Inspector:
    """The set's inspection graph for `family`, loaded on first use and kept by the set (dropped
    with it). 409 naming `model` when the set has none (e.g. a training snapshot)."""
    path = Path(models.meta.folder) / f"{family}.attn.onnx"

    def load() -> Inspector:
        if not path.exists():
            raise ApiError(f"model set {models.id!r} has no attention inspection graph ({path.name}); "
                           "export one with `python -m training.inspect_export FOLDER`", "model", status=409)
        task = getattr(models, family)
        try:
            return Inspector(runtime.session(path), family, int(task.config["n_layer"]), runtime.gate)
        except Exception as e:  # noqa: BLE001 - a broken file is this set's problem, not a 500
            raise ApiError(f"{path.name} of model set {models.id!r} could not be loaded: {e}", "model", status=409) from e

    return models.memo("inspector", family, load)


def attention_of(models, family: str, ids: list[int], pad: int, seed: int, runtime, layer: int, head: int) -> dict:
    """`family`'s weights over the text as it reads it (its task's attention_input: GPT the text, BERT
    [CLS] text [SEP] [PAD]*pad, where the [PAD] slots show the padding mask at work; T5 the line with
    a span hidden and written back; PLM its two streams for the order `seed` draws): who attends to
    whom, and how far the inspection graph's logits are from the served graph's."""
    task = getattr(models, family)
    seq, allowed, extra = task.attention_input(ids, pad, seed)
    logits, weights = inspector(models, family, runtime).run(seq, extra)
    served = task.served_logits(seq, extra)
    maps = summarise(weights, allowed, float(np.abs(logits - served).max()), family, models.id, layer, head)
    return {"tokens": [token(models.vocab, t) for t in seq], **maps}


def token(vocab, t: int) -> str:
    """A token as the page labels it: a character or special, or a T5 sentinel ⟨k⟩ (ids after the vocabulary)."""
    return vocab.token(t) if t < vocab.size else f"⟨{t - vocab.size}⟩"


# What the page draws: one (query, key) grid, to 4 decimals (a heatmap cell shows 0.1 %). Every
# layer and head at full precision was ~2 MB of JSON for a 43-character sentence.
DECIMALS = 4


def view(weights: np.ndarray, layer: int, head: int) -> np.ndarray:
    """(layer, head, query, key) -> the chosen layer's and head's (query, key) grid; -1 averages that axis."""
    w = weights.mean(axis=0) if layer < 0 else weights[layer]
    return w.mean(axis=0) if head < 0 else w[head]


def summarise(weights: np.ndarray, allowed: np.ndarray, diff: float, family: str, set_id: str, layer: int,
              head: int) -> dict:
    if not np.isfinite(diff) or diff > AGREEMENT:
        raise ApiError(f"the {family} inspection graph of set {set_id!r} disagrees with the served model "
                       f"(logits differ by {diff:.2g}); re-export it", "model", status=409)
    n_layer, n_head = weights.shape[:2]
    for name, index, size in (("layer", layer, n_layer), ("head", head, n_head)):
        if index >= size:
            raise ApiError(f"{name} must be -1 (the mean) or below {size}, the {family} model's n_{name}", name,
                           status=422)
    rows = np.where(allowed, weights, 0.0).sum(-1)
    return {"n_layer": int(n_layer), "n_head": int(n_head), "layer": layer, "head": head,
            "weights": np.round(view(weights, layer, head).astype(np.float64), DECIMALS).tolist(),
            "served_logits_max_abs_diff": diff,
            "row_sum_max_error": float(np.abs(rows - 1).max()),
            "blocked_max": float(np.where(allowed, 0.0, weights).max())}
