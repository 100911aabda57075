"""Pretraining objectives: where a batch comes from, and a batch in, the loss and its parts out.

The training loop (training/train.py) knows only this interface; which model it trains and how
its inputs are laid out is the objective's business (and the family table's, training/families/):

    objective.source(split_ids, seed)   a batch source over encoded documents (sample(B) -> tensors)
    objective.batch(source, B, gen)      one batch as a dict of tensors (gen: the masking draws)
    objective.loss(model, batch)         (loss, {part name: 0-d tensor}), "loss" among the parts

Causal LM (GPT): predict every next character. Masked LM (BERT): recover the hidden characters
(training/masking.py: per character, span or whole word), plus next-sentence prediction on
`[CLS] A [SEP] B [SEP]` pairs. Replaced-token detection (ELECTRA) lives in training/electra.py.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .data import CLMBatches, NSPPairs
from .masking import mask_tokens, word_table


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the positions whose label is not -100. logits (..., V), labels (...)."""
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=-100)


class Objective:
    parts: tuple[str, ...] = ("loss",)

    def __init__(self, cfg, tok):
        self.cfg, self.tok = cfg, tok

    def source(self, docs_ids, seed: int):
        raise NotImplementedError

    def batch(self, source, batch_size: int, gen: torch.Generator) -> dict:
        raise NotImplementedError

    def loss(self, model, batch: dict):
        raise NotImplementedError


class CausalLM(Objective):
    """GPT: input = text[i:i+T], target = text[i+1:i+T+1]; every position is scored."""

    def source(self, docs_ids, seed: int):
        return CLMBatches(docs_ids, self.cfg.context, seed)

    def batch(self, source, batch_size: int, gen: torch.Generator) -> dict:
        x, y = source.sample(batch_size)  # (B, T) each
        return {"idx": x, "targets": y}

    def loss(self, model, batch: dict):
        logits = model(batch["idx"])  # (B, T, vocab)
        loss = cross_entropy(logits, batch["targets"])
        return loss, {"loss": loss}


class MaskedLM(Objective):
    """BERT: 15 % of the characters selected (by cfg.masking), 80/10/10, scored there only;
    plus NSP on the [CLS] row unless cfg.nsp is off (then the pairs are still pairs)."""

    parts = ("loss", "mlm", "nsp")

    def __init__(self, cfg, tok):
        super().__init__(cfg, tok)
        self.is_word = word_table(tok.itos)

    def source(self, docs_ids, seed: int):
        return NSPPairs(docs_ids, self.tok.stoi.get("\n"), self.cfg.context, seed)

    def corrupt(self, ids: torch.Tensor, gen: torch.Generator):
        return mask_tokens(ids, self.tok.vocab_size, self.tok.first_char_id, gen, self.cfg.mask_rate,
                           self.cfg.masking, self.is_word)

    def batch(self, source, batch_size: int, gen: torch.Generator) -> dict:
        ids, seg, nsp_labels = source.sample(batch_size)  # (B, T), (B, T), (B,)
        corrupted, mlm_labels = self.corrupt(ids, gen)
        return {"idx": corrupted, "segments": seg, "mlm_labels": mlm_labels, "nsp_labels": nsp_labels}

    def loss(self, model, batch: dict):
        mlm_logits, nsp_logits = model(batch["idx"], batch["segments"])  # (B, T, vocab), (B, 2)
        mlm = cross_entropy(mlm_logits, batch["mlm_labels"])
        nsp = F.cross_entropy(nsp_logits, batch["nsp_labels"]) if self.cfg.nsp else torch.zeros((), device=mlm.device)
        return mlm + nsp, {"loss": mlm + nsp, "mlm": mlm, "nsp": nsp}
