"""NSP's decision threshold, chosen on validation pairs only and folded into the exported model.

A BERT whose next-sentence head leans one way (it said IsNext 164 times in 200 quiz items, 100 of
which were) loses points a class wins back by always answering IsNext. The fix is a threshold: on
balanced pairs drawn from the validation plays with a seed of their own (not the evaluation's
pairs, not the quiz's), find the shift of the IsNext-minus-NotNext logit that answers IsNext on half
of them (the median), and subtract it from the head's IsNext bias. The ONNX file, the server, the
quiz and every reported figure then use the same decision; the card records the shift and where it
was chosen.
"""
from __future__ import annotations

import torch

from .evaluate import bert_eval_batches

CALIBRATION_SEED = 4242  # not the evaluation's (2024) nor the quiz's


@torch.no_grad()
def nsp_margins(model, batches) -> torch.Tensor:
    """logit(IsNext) - logit(NotNext) for every pair, (N,)."""
    out = []
    for corrupted, seg, _labels, _nsp in batches:
        _, nsp = model(corrupted, seg)
        out.append(nsp[:, 0] - nsp[:, 1])
    return torch.cat(out)


@torch.no_grad()
def calibrate_nsp(model, tok, docs, n_pairs: int = 2000, seed: int = CALIBRATION_SEED) -> dict:
    """Shift the IsNext bias so that the model answers IsNext on half of `n_pairs` balanced pairs
    from `docs` (the validation split). Changes `model` in place; returns what the card records."""
    model.eval()
    batches = bert_eval_batches(tok, docs, model.cfg.context, n_pairs, seed=seed)
    labels = torch.cat([b[3] for b in batches])
    margins = nsp_margins(model, batches)
    before_isnext = float((margins > 0).float().mean())
    before_acc = float(((margins <= 0).long() == labels).float().mean())
    # Midway between the two middle margins (not on one of them): after the shift is folded into the
    # bias, float rounding cannot tip a pair that sat exactly on the threshold to the other side.
    ordered = margins.sort().values
    shift = float((ordered[(len(ordered) - 1) // 2] + ordered[len(ordered) // 2]) / 2)
    model.nsp_head.bias[0] -= shift
    after = margins - shift
    return {"split": "validation", "pairs": int(len(labels)), "seed": seed, "isnext_bias_shift": round(shift, 6),
            "before": {"says_isnext": round(before_isnext, 4), "accuracy": round(before_acc, 4)},
            "after": {"says_isnext": round(float((after > 0).float().mean()), 4),
                      "accuracy": round(float(((after <= 0).long() == labels).float().mean()), 4)},
            "rule": "IsNext when logit(IsNext) - logit(NotNext) > the median of these pairs (folded into the head's bias)"}
