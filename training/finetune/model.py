"""A pretrained BERT encoder with a small task head, in the shape of Hugging Face's
BertForSequenceClassification / BertForTokenClassification:

    SequenceClassifier  [CLS] text [SEP] -> encoder -> the mean of every non-[PAD] position's hidden
                        state (mean pooling, as Sentence-BERT) -> head -> (B, n_labels)
    TokenClassifier     [CLS] text [SEP] -> encoder -> every position's hidden state -> head
                        -> (B, T, n_labels); row i + 1 is character i of the text

Why the mean and not BERT's pooled [CLS] (dense + tanh): pretraining trains that pooler only for
next-sentence prediction (about 72 % right on the shipped BERT), and it carries next to nothing
about a text's content. Measured on the shipped BERT: a logistic regression over all labelled
examples scores 50 % (sentiment) and 56 % (plays) on the pooled [CLS], 70 % and 66 % on the mean of
the positions; a full fine-tune on 32 examples of passages written forwards or backwards reached
76 % from [CLS] (64 to 89 % over 3 seeds) and 85 % (83 to 87 %) from the mean. The mean is what
Sentence-BERT uses; it is a fixed reduction, so the pretrained encoder is all that is reused.

The head is dropout + one linear layer (ClassificationHead). Labels of -100 are ignored by the
loss ([CLS], [SEP], padding, characters cut off at the model's context).

The three arms of the fine-tune lab differ only in where the encoder starts and what trains:
    full     pretrained encoder, everything trained
    probe    pretrained encoder frozen (requires_grad False, never stepped), head only
    scratch  the same architecture freshly initialised (BERT's own init, seeded), everything trained
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..model import BERT, Transformer, TransformerConfig, init_weights
from ..tokenizer import CLS, PAD, SEP

ARMS = ("full", "probe", "scratch")
KINDS = ("sequence", "token")


class Encoder(nn.Module):
    """BERT without its pretraining heads (MLM, and the NSP pooler and head): the Transformer (same
    module names as training/model.py's BERT, so its weights load by name)."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.transformer = Transformer(cfg, n_segments=2)

    def forward(self, input_ids, token_type_ids):
        B, T = input_ids.shape
        positions = torch.arange(T, device=input_ids.device)
        attn_mask = (input_ids != PAD)[:, None, None, :]  # (B, 1, 1, T): every non-[PAD] key
        return self.transformer(input_ids, positions, token_type_ids, attn_mask=attn_mask)  # (B, T, C)

    @staticmethod
    def pooled(hidden, input_ids):
        """(B, C): the mean of the hidden states of every non-[PAD] position ([CLS] text [SEP])."""
        keep = (input_ids != PAD).to(hidden.dtype).unsqueeze(-1)  # (B, T, 1)
        return (hidden * keep).sum(1) / keep.sum(1)

    @classmethod
    def from_bert(cls, bert: BERT) -> "Encoder":
        enc = cls(bert.cfg)
        enc.transformer.load_state_dict(bert.transformer.state_dict())
        return enc

    @classmethod
    def fresh(cls, cfg: TransformerConfig, seed: int) -> "Encoder":
        """From scratch: what pretraining starts from (BERT's init under this seed)."""
        torch.manual_seed(seed)
        return cls.from_bert(BERT(cfg))


class ClassificationHead(nn.Module):
    def __init__(self, n_embd: int, n_labels: int, dropout: float = 0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(n_embd, n_labels)
        init_weights(self, 1)

    def forward(self, features):
        return self.classifier(self.dropout(features))


class Classifier(nn.Module):
    """Encoder + head for one task kind; `features` is the part a probe keeps frozen."""

    def __init__(self, encoder: Encoder, n_labels: int, kind: str):
        super().__init__()
        assert kind in KINDS
        self.encoder, self.kind = encoder, kind
        self.head = ClassificationHead(encoder.cfg.n_embd, n_labels)

    def features(self, input_ids, token_type_ids):
        hidden = self.encoder(input_ids, token_type_ids)
        return self.encoder.pooled(hidden, input_ids) if self.kind == "sequence" else hidden

    def forward(self, input_ids, token_type_ids, labels=None):
        logits = self.head(self.features(input_ids, token_type_ids))
        if labels is None:
            return logits
        return logits, classification_loss(logits, labels)


def classification_loss(logits, labels, weight=None):
    """Cross-entropy, each label weighted by `weight` (class weights; None = all 1), -100 ignored."""
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1), weight=weight, ignore_index=-100)


SMALL = {"n_layer": 2, "n_embd": 96, "n_ff": 384}  # the from-scratch arm's second, smaller model


def small_config(cfg: TransformerConfig) -> TransformerConfig:
    from dataclasses import replace

    return replace(cfg, **SMALL)


def build_classifier(arm: str, pretrained: BERT, n_labels: int, kind: str, seed: int, small: bool = False) -> Classifier:
    """The arm's model: the head is initialised under `seed` the same way in every arm. `small`
    (scratch only): the smaller model (SMALL) instead of the pretrained one's size."""
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r} (one of {', '.join(ARMS)})")
    if small and arm != "scratch":
        raise ValueError("only the from-scratch arm has a smaller model")
    cfg = small_config(pretrained.cfg) if small else pretrained.cfg
    encoder = Encoder.fresh(cfg, seed) if arm == "scratch" else Encoder.from_bert(pretrained)
    torch.manual_seed(10_000 + seed)
    model = Classifier(encoder, n_labels, kind)
    if arm == "probe":
        model.encoder.requires_grad_(False)
        model.encoder.eval()
    return model


@dataclass
class Batch:
    input_ids: torch.Tensor       # (B, T) [CLS] text [SEP] [PAD]...
    token_type_ids: torch.Tensor  # (B, T) zeros: one segment
    labels: torch.Tensor          # (B,) or (B, T) with -100 where nothing is asked

    def to(self, device) -> "Batch":
        """The same batch where the model is (a GPU fine-tune; the CPU keeps it as it is)."""
        if torch.device(device).type == "cpu":
            return self
        return Batch(self.input_ids.to(device), self.token_type_ids.to(device), self.labels.to(device))


def encode_batch(texts: list[str], targets: list, kind: str, stoi: dict, unk: int, context: int) -> Batch:
    """targets: label ids (sequence) or per-character label-id lists (token). Texts longer than
    context - 2 characters are cut (their cut characters are not scored)."""
    keep = context - 2
    rows = [[CLS] + [stoi.get(c, unk) for c in t[:keep]] + [SEP] for t in texts]
    T = max(len(r) for r in rows)
    ids = torch.full((len(rows), T), PAD, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = torch.tensor(r)
    if kind == "sequence":
        labels = torch.tensor(targets, dtype=torch.long)
    else:
        labels = torch.full((len(rows), T), -100, dtype=torch.long)
        for i, tags in enumerate(targets):
            tags = tags[:keep]
            labels[i, 1:1 + len(tags)] = torch.tensor(tags, dtype=torch.long)
    return Batch(ids, torch.zeros_like(ids), labels)
