"""ELECTRA: replaced-token detection, one family in one file.

A small masked-language model (the *generator*, a half-width BERT) fills EVERY masked position
with a character sampled from its own guess; the *discriminator* then reads the whole repaired
text and says, for each character, "original or replaced?". A sampled character that happens to
equal the original counts as original (ELECTRA's rule). The discriminator learns from every
position, not just the 15 % that were masked; it is the model that is kept and served.

    batch:  ids (B, T) = [CLS] text [SEP]; selected (B, T) = the masked positions
    gen:    generator([MASK] at selected) -> logits (B, T, vocab)  -> MLM loss at selected
    fill:   argmax(logits + Gumbel noise) over ordinary characters  = a sample, no gradient
    disc:   discriminator(ids with fills) -> logits (B, T)          -> BCE at every non-pad position
    loss  = mlm + RTD_WEIGHT * rtd    (the paper's lambda = 50)

The discriminator may start from a trained BERT's encoder (`--init-from`, `ELECTRA.init_from`):
trained from scratch on one CPU core it learns the language too slowly from "replaced or not"
alone to catch anything within an hour (benchmarks/electra_diagnosis.py, docs/models.md).

Exported as electra.onnx: input_ids, token_type_ids (B, T) -> replaced_logits (B, T).
"""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F

from .data import CLMBatches, encode_documents
from .masking import select, word_table
from .model import BERT, Transformer, TransformerConfig, init_weights
from .objectives import Objective, cross_entropy
from .tokenizer import CLS, MASK, PAD, SEP

RTD_WEIGHT = 50.0
# The generator's size. A weak generator makes replacements the discriminator can learn to catch:
# at this scale a half-width generator as deep as the discriminator fills plausible characters and
# the discriminator never left the prior (3 tries, 0 % caught); quarter width and one layer
# (benchmarks/electra_diagnosis.py: AUC 0.59 vs 0.53 at 1,500 steps) is what the shipped set uses.
GENERATOR_SCALE = 0.25  # the generator's width as a share of the discriminator's
GENERATOR_LAYERS = 1  # None: the discriminator's depth


def generator_config(cfg: TransformerConfig) -> TransformerConfig:
    """A smaller generator than the discriminator (the paper: 1/4 to 1/2 of its width works best)."""
    n_head = max(1, round(cfg.n_head * GENERATOR_SCALE))
    n_embd = max(n_head, int(cfg.n_embd * GENERATOR_SCALE) // n_head * n_head)
    return replace(cfg, n_head=n_head, n_embd=n_embd, n_ff=max(n_embd, int(cfg.n_ff * GENERATOR_SCALE)),
                   n_layer=GENERATOR_LAYERS or cfg.n_layer)


class Discriminator(nn.Module):
    """The shared Transformer, bidirectional, with a per-character head: dense, GELU, one logit."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.transformer = Transformer(cfg, n_segments=2)
        self.dense = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.head = nn.Linear(cfg.n_embd, 1)  # > 0: replaced
        init_weights(self, cfg.n_layer)

    def forward(self, idx, segments, pad_id: int = PAD):
        B, T = idx.shape
        positions = torch.arange(T, device=idx.device)
        attn_mask = (idx != pad_id)[:, None, None, :]  # (B, 1, 1, T): every character sees every other
        h = self.transformer(idx, positions, segments, attn_mask=attn_mask)  # (B, T, C)
        return self.head(F.gelu(self.dense(h), approximate="tanh")).squeeze(-1)  # (B, T)


class ELECTRA(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.generator = BERT(generator_config(cfg))  # its MLM head only; the NSP head stays unused
        self.discriminator = Discriminator(cfg)

    def init_from(self, state: dict, model_config: dict) -> None:
        """Start the discriminator's encoder from a trained BERT's (same size): the embeddings and
        blocks that read text, not BERT's heads. Why: at this scale the discriminator learns the
        language very slowly from the replaced-or-not signal alone (benchmarks/electra_diagnosis.py)."""
        mine = {k: v for k, v in model_config.items() if k != "dropout"}
        if mine != {k: v for k, v in self.cfg.to_dict().items() if k != "dropout"}:
            raise ValueError(f"--init-from: the BERT's size {model_config} differs from this ELECTRA's {self.cfg.to_dict()}")
        encoder = {k.removeprefix("transformer."): v for k, v in state.items() if k.startswith("transformer.")}
        if not encoder:
            raise ValueError("--init-from: the checkpoint has no encoder (transformer.*) weights")
        self.discriminator.transformer.load_state_dict(encoder)

    def forward(self, idx, segments):
        """The served model: the discriminator's replaced-logit per character, (B, T)."""
        return self.discriminator(idx, segments)


class SingleSegments:
    """`[CLS] text [SEP]` rows of `context` positions from random windows (segment 0 throughout)."""

    def __init__(self, docs_ids, context: int, seed: int):
        self.windows = CLMBatches(docs_ids, context - 2, seed)

    def sample(self, batch_size: int):
        x, _ = self.windows.sample(batch_size)  # (B, T - 2)
        ids = F.pad(F.pad(x, (1, 0), value=CLS), (0, 1), value=SEP)  # (B, T)
        return ids, torch.zeros_like(ids)

    def get_state(self):
        return self.windows.get_state()

    def set_state(self, state) -> None:
        self.windows.set_state(state)


class ReplacedTokenDetection(Objective):
    parts = ("loss", "mlm", "rtd")

    def __init__(self, cfg, tok):
        super().__init__(cfg, tok)
        self.is_word = word_table(tok.itos)

    def source(self, docs_ids, seed: int):
        return SingleSegments(docs_ids, self.cfg.context, seed)

    def batch(self, source, batch_size: int, gen: torch.Generator) -> dict:
        ids, seg = source.sample(batch_size)
        ordinary = ids >= self.tok.first_char_id
        selected, _ = select(ids, self.cfg.masking, self.cfg.mask_rate, gen, ordinary, self.is_word)
        u = torch.rand((*ids.shape, self.tok.vocab_size), generator=gen).clamp_(1e-9, 1 - 1e-9)
        return {"ids": ids, "segments": seg, "selected": selected, "gumbel": -torch.log(-torch.log(u))}

    def loss(self, model, batch: dict):
        ids, seg, selected = batch["ids"], batch["segments"], batch["selected"]
        first = self.tok.first_char_id
        gen_logits, _ = model.generator(torch.where(selected, MASK, ids), seg)  # (B, T, vocab)
        mlm = cross_entropy(gen_logits, torch.where(selected, ids, -100))
        with torch.no_grad():  # the generator's sample; no gradient flows through the choice
            scores = gen_logits.detach().float() + batch["gumbel"]
            scores[..., :first] = float("-inf")  # never a special
            fill = scores.argmax(-1)  # (B, T)
        corrupted = torch.where(selected, fill, ids)
        replaced = (corrupted != ids).float()  # a sample equal to the original counts as original
        logits = model.discriminator(corrupted, seg)  # (B, T)
        weight = (ids != PAD).float()
        rtd = F.binary_cross_entropy_with_logits(logits.float(), replaced, weight=weight, reduction="sum") / weight.sum()
        loss = mlm + (getattr(self.cfg, "extra", None) or {}).get("rtd_weight", RTD_WEIGHT) * rtd
        return loss, {"loss": loss, "mlm": mlm, "rtd": rtd}


# --- export, evaluation and the live view ----------------------------------------------------

class ELECTRAExport(nn.Module):
    def __init__(self, electra):
        super().__init__()
        self.electra = electra

    def forward(self, input_ids, token_type_ids):
        return self.electra(input_ids, token_type_ids)


def example_inputs(cfg, T: int, gen: torch.Generator) -> dict:
    ids = torch.randint(5, cfg.vocab_size, (2, T), generator=gen)
    return {"input_ids": ids, "token_type_ids": torch.zeros_like(ids)}


def roc_auc(scores: torch.Tensor, truth: torch.Tensor) -> float:
    """Area under the ROC curve: the chance that a random replaced character scores above a random
    original one (ties count half), from the ranks (Mann-Whitney U)."""
    pos, n_pos = truth.bool(), int(truth.sum())
    n_neg = truth.numel() - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = scores.double().argsort()
    ranks = torch.empty_like(order, dtype=torch.float64)
    ranks[order] = torch.arange(1, len(order) + 1, dtype=torch.float64)
    sorted_scores = scores.double()[order]  # average the ranks of tied scores
    uniq, inverse, counts = torch.unique_consecutive(sorted_scores, return_inverse=True, return_counts=True)
    ends = counts.cumsum(0).double()
    mean_rank = ends - (counts.double() - 1) / 2
    ranks[order] = mean_rank[inverse]
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def random_fill_figures(logits: torch.Tensor, truth: torch.Tensor) -> dict:
    flagged = logits > 0
    return {"auc": roc_auc(logits, truth), "replaced_recall": float((flagged & truth).sum() / truth.sum().clamp(min=1)),
            "original_flagged": float((flagged & ~truth).sum() / (~truth).sum().clamp(min=1))}


@torch.no_grad()
def evaluate_electra(model, tok, docs, n_rows: int = 400, seed: int = 2024, batch_size: int = 50) -> dict:
    """On held-out windows corrupted by the model's own generator (15 % per character, fixed
    draws): the discriminator's accuracy on every character, on the replaced ones (caught at
    p(replaced) > 0.5) and on the originals (flagged at p > 0.5), beside always answering
    "original"; the area under the ROC curve of its scores; the generator's masked top-1; and the
    same figures when those positions are filled with uniformly random characters instead."""
    obj = ReplacedTokenDetection(SimpleNamespace(context=model.cfg.context, masking="char", mask_rate=0.15), tok)
    source = obj.source(encode_documents(tok, docs), seed)
    gen = torch.Generator().manual_seed(seed)
    counts = dict(correct=0, n=0, rep_correct=0, rep=0, orig_correct=0, gen_top1=0, masked=0)
    scores_all, truth_all, random_scores, random_truth = [], [], [], []
    for _ in range(max(1, n_rows // batch_size)):
        b = obj.batch(source, batch_size, gen)
        ids, sel = b["ids"], b["selected"]
        gen_logits, _ = model.generator(torch.where(sel, MASK, ids), b["segments"])
        scores = gen_logits + b["gumbel"]
        scores[..., :tok.first_char_id] = float("-inf")
        corrupted = torch.where(sel, scores.argmax(-1), ids)
        truth = corrupted != ids
        logits = model.discriminator(corrupted, b["segments"])
        said = logits > 0  # p(replaced) > 0.5
        real = ids >= tok.first_char_id
        scores_all.append(logits[real].float())
        truth_all.append(truth[real])
        # The same positions filled with uniformly random characters instead (the easy case).
        rnd = torch.randint(tok.first_char_id, tok.vocab_size, ids.shape, generator=gen)
        rnd_corrupted = torch.where(sel, rnd, ids)
        rnd_truth = rnd_corrupted != ids
        rnd_logits = model.discriminator(rnd_corrupted, b["segments"])
        random_scores.append(rnd_logits[real].float())
        random_truth.append(rnd_truth[real])
        counts["n"] += int(real.sum())
        counts["correct"] += int(((said == truth) & real).sum())
        counts["rep"] += int((truth & real).sum())
        counts["rep_correct"] += int((said & truth & real).sum())
        counts["orig_correct"] += int((~said & ~truth & real).sum())
        counts["masked"] += int(sel.sum())
        counts["gen_top1"] += int((gen_logits[sel].argmax(-1) == ids[sel]).sum())
    n, rep = counts["n"], max(1, counts["rep"])
    original_accuracy = counts["orig_correct"] / max(1, n - counts["rep"])
    return {"detection_accuracy": counts["correct"] / n, "replaced_recall": counts["rep_correct"] / rep,
            "original_accuracy": original_accuracy, "original_flagged": 1 - original_accuracy,
            "auc": roc_auc(torch.cat(scores_all), torch.cat(truth_all)),
            "random_fill": random_fill_figures(torch.cat(random_scores), torch.cat(random_truth)),
            "always_original_accuracy": 1 - counts["rep"] / n, "replaced_share": counts["rep"] / n,
            "generator_masked_top1": counts["gen_top1"] / max(1, counts["masked"]), "characters": n,
            "recipe": {"mask_rate": 0.15, "fill": "a sample of the generator at every masked position"}}


@torch.no_grad()
def detect(model, tok, text: str, positions: list[int], seed: int = 11) -> dict:
    """The live view: mask `positions` of `[CLS] text [SEP]`, let the generator fill every one
    (a seeded sample), and the discriminator's probability that each character was replaced."""
    ids = torch.tensor([[CLS, *[int(i) for i in tok.encode(text)][: model.cfg.context - 2], SEP]])
    seg = torch.zeros_like(ids)
    sel = torch.zeros_like(ids, dtype=torch.bool)
    for p in positions:
        if p + 1 < ids.size(1) - 1:
            sel[0, p + 1] = True
    was_training = model.training
    model.eval()
    logits, _ = model.generator(torch.where(sel, MASK, ids), seg)
    u = torch.rand(logits.shape, generator=torch.Generator().manual_seed(seed)).clamp_(1e-9, 1 - 1e-9)
    scores = logits + -torch.log(-torch.log(u))
    scores[..., :tok.first_char_id] = float("-inf")
    corrupted = torch.where(sel, scores.argmax(-1), ids)
    p = torch.sigmoid(model.discriminator(corrupted, seg))[0, 1:-1]
    model.train(was_training)
    shown = [tok.itos[int(i)] for i in corrupted[0, 1:-1]]
    replaced = (corrupted != ids)[0, 1:-1]
    return {"text": text, "corrupted": "".join(shown), "replaced": [int(i) for i in torch.nonzero(replaced).flatten()],
            "p_replaced": [round(float(x), 4) for x in p],
            "correct": int(((p > 0.5) == replaced).sum()), "characters": len(shown)}


def live_view(model, tok, prompt: str, probe: str, positions: list[int]) -> dict:
    """What a live run shows every ~10 s: the probe line, masked, filled by the generator, and
    the discriminator's verdict at every character."""
    return detect(model, tok, probe, positions)
