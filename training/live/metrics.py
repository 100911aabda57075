"""Live held-out numbers beyond the loss, measured at every evaluation of a live run.

Each family may name one in its table entry (training/families/ `live_metric`): a factory
f(tok, docs, cfg) -> measure(model) -> {name: value}, built once per run on held-out documents
(fixed batches, so every point of the curve is measured on the same text).

BERT: masked top-1 on held-out text, beside the unigram baseline (always guess the most frequent
characters of the training text). Its loss mixes MLM and NSP; this says plainly how often it
gets a hidden character right, and whether that beats guessing "the most common letter"."""
from __future__ import annotations

LIVE_PAIRS = 200  # held-out pairs per measurement (about 200 x 15 % of the context masked characters)
SEED = 2024


def bert_masked_top1(tok, docs, cfg, n_pairs: int = LIVE_PAIRS):
    import torch

    from ..evaluate import _masked_accuracy, bert_eval_batches

    batches = bert_eval_batches(tok, docs, cfg.context, n_pairs=n_pairs, seed=SEED,
                                masking=getattr(cfg, "masking", "char"))
    counts = torch.zeros(tok.vocab_size)
    for ch, c in tok.counts.items():
        counts[tok.stoi[ch]] = c
    baseline = _masked_accuracy(None, batches, unigram_rank=counts.argsort(descending=True))["masked_top1"]

    def measure(model) -> dict:
        was_training = model.training
        model.eval()
        try:
            top1 = _masked_accuracy(model, batches)["masked_top1"]
        finally:
            model.train(was_training)
        return {"masked_top1": round(top1, 4), "masked_top1_unigram": round(baseline, 4)}

    return measure
