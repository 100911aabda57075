"""Evaluate a checkpoint on held-out text; results print as JSON.

GPT:  cross-entropy in nats/char (and bits/char, perplexity) with overlapping windows, so every
      scored character sees at least half a context of history.
BERT: masked-character top-1/top-5 under the 80/10/10 corruption at 15 %, beside the same
      architecture at random init and a unigram-frequency baseline; NSP accuracy on balanced pairs.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from .data import Document, NSPPairs, encode_documents, load_corpus, read_documents, split_into_documents
from .tokenizer import CharTokenizer


def held_out_documents(text: str | Path | None, corpus: str | Path, split: str = "test") -> list[Document]:
    if text is None:
        return load_corpus(corpus)[split]
    return read_documents(text)


@torch.no_grad()
def evaluate_gpt(model, tok: CharTokenizer, docs: list[Document], max_chars: int = 400_000, batch_size: int = 16) -> dict:
    ctx = model.cfg.context
    stride = ctx // 2
    data = torch.from_numpy(np.concatenate(encode_documents(tok, docs)))[: max_chars + 1]
    n_targets = len(data) - 1  # position t predicts data[t + 1]
    if n_targets < 1:
        raise ValueError("held-out text is too short")
    # Windows over positions [begin, end); each scores only the positions no earlier window scored,
    # so every character is counted once and (after the first window) has >= ctx/2 of history.
    windows, prev_end = [], 0
    for begin in range(0, n_targets, stride):
        end = min(begin + ctx, n_targets)
        windows.append((begin, end, prev_end - begin))
        prev_end = end
        if end == n_targets:
            break
    total, count = 0.0, 0
    for i in range(0, len(windows), batch_size):
        group = windows[i:i + batch_size]
        by_length: dict[int, list] = {}
        for w in group:
            by_length.setdefault(w[1] - w[0], []).append(w)
        for length, ws in by_length.items():
            x = torch.stack([data[b:b + length] for b, _, _ in ws])
            y = torch.stack([data[b + 1:b + 1 + length] for b, _, _ in ws])
            nll = F.cross_entropy(model(x).transpose(1, 2), y, reduction="none")  # (B, T)
            for row, (_, _, first) in enumerate(ws):
                total += nll[row, first:].sum().item()
                count += length - first
    nats = total / count
    return {"nats_per_char": nats, "bits_per_char": nats / math.log(2), "perplexity": math.exp(nats), "chars_scored": count}


@torch.no_grad()
def _masked_accuracy(model, batches, unigram_rank: torch.Tensor | None = None) -> dict:
    top1 = top5 = n = nsp_correct = nsp_n = 0
    for corrupted, seg, labels, nsp_labels in batches:
        sel = labels != -100
        if unigram_rank is None:
            mlm, nsp = model(corrupted, seg)
            top = mlm[sel].topk(5, dim=-1).indices  # (N, 5)
            nsp_correct += (nsp.argmax(-1) == nsp_labels).sum().item()
            nsp_n += len(nsp_labels)
        else:
            top = unigram_rank[:5].expand(int(sel.sum()), 5)
        truth = labels[sel][:, None]
        top1 += (top[:, :1] == truth).sum().item()
        top5 += (top == truth).any(-1).sum().item()
        n += len(truth)
    out = {"masked_top1": top1 / max(n, 1), "masked_top5": top5 / max(n, 1), "masked_positions": n}
    if nsp_n:
        out["nsp_accuracy"] = nsp_correct / nsp_n
        out["nsp_pairs"] = nsp_n
    return out


def bert_eval_batches(tok: CharTokenizer, docs: list[Document], context: int, n_pairs: int = 2000,
                      mask_rate: float = 0.15, seed: int = 2024, batch_size: int = 50, masking: str = "char"):
    """Fixed, balanced NSP pairs from held-out documents with one fixed 80/10/10 corruption
    (masking: which characters are selected, training/masking.py)."""
    from .masking import mask_tokens, word_table

    if len(docs) < 2:
        docs = [part for d in docs for part in split_into_documents(d, 8)]
    pairs = NSPPairs(encode_documents(tok, docs), tok.stoi.get("\n"), context, seed)
    gen = torch.Generator().manual_seed(seed)
    is_word = word_table(tok.itos)
    batches = []
    for _ in range(max(1, n_pairs // batch_size)):
        ids, seg, nsp_labels = pairs.sample(batch_size)
        corrupted, labels = mask_tokens(ids, tok.vocab_size, tok.first_char_id, gen, mask_rate, masking, is_word)
        batches.append((corrupted, seg, labels, nsp_labels))
    return batches


def evaluate_bert(model, tok: CharTokenizer, docs: list[Document], n_pairs: int = 2000, seed: int = 2024) -> dict:
    batches = bert_eval_batches(tok, docs, model.cfg.context, n_pairs, seed=seed)
    trained = _masked_accuracy(model, batches)
    torch.manual_seed(seed)
    random_init = _masked_accuracy(type(model)(model.cfg).eval(), batches)  # the same architecture, untrained
    counts = torch.zeros(tok.vocab_size)
    for ch, c in tok.counts.items():
        counts[tok.stoi[ch]] = c
    unigram = _masked_accuracy(None, batches, unigram_rank=counts.argsort(descending=True))
    return {**trained, "random_init": random_init, "unigram_baseline": unigram,
            "recipe": {"mask_rate": 0.15, "mask": 0.8, "random": 0.1, "unchanged": 0.1}}


def objective_batches(objective, tok: CharTokenizer, docs: list[Document], n_windows: int, seed: int,
                      size: int = 50) -> list[dict]:
    """Held-out batches drawn by a family's own objective (T5's spans, PLM's orders), the same for
    every model scored on them: the trained one, the untrained one, a baseline."""
    source = objective.source(encode_documents(tok, docs), seed)
    gen = torch.Generator().manual_seed(seed)
    return [objective.batch(source, min(size, n_windows - k), gen) for k in range(0, n_windows, size)]


def most_common_id(tok: CharTokenizer) -> int:
    """The training text's most frequent character (the unigram baseline's one answer)."""
    return tok.stoi[max(tok.counts, key=tok.counts.get)] if tok.counts else tok.first_char_id


def evaluate_checkpoint(checkpoint: str | Path, text: str | Path | None = None, split: str = "test", **kw) -> dict:
    from .train import load_checkpoint

    family, model, tok, state = load_checkpoint(checkpoint)
    return evaluate_model(family, model, tok, state["train_config"]["corpus"], text, split, **kw)


def evaluate_model(family: str, model, tok: CharTokenizer, corpus: str | Path, text: str | Path | None = None,
                   split: str = "test", **kw) -> dict:
    """evaluate_checkpoint for a model already in memory (package loads each checkpoint once)."""
    docs = held_out_documents(text, corpus, split)
    from .families import family as family_entry

    result = family_entry(family).evaluator()(model, tok, docs, **kw)
    source = str(text) if text is not None else f"{split} split of {Path(corpus).name}"
    return {"family": family, "held_out": source, "documents": [d.name for d in docs], **result}


def evaluate_set(folder: str | Path, family: str, corpus: str | Path, splits: list[str], write_card: bool = False) -> dict:
    """A model set's `family` on the corpus's held-out splits, the model rebuilt from the set's own
    ONNX file (checked to give its logits), so the figures are the served model's even where its
    checkpoint is gone. write_card: the results replace those splits in <family>.card.json (what
    the home page's card and the pages read), after checking the card was trained on this split."""
    from app.contract.spec import write_json

    from .families import family as family_entry
    from .inspect_export import model_from_onnx

    folder = Path(folder)
    card_path = folder / f"{family}.card.json"
    card = json.loads(card_path.read_text(encoding="utf-8"))
    docs = load_corpus(corpus)
    for split in splits:
        named = card.get("corpus", {}).get("split", {}).get(split)
        if named is not None and named != [d.name for d in docs[split]]:
            raise ValueError(f"{card_path.name} was measured on other {split} documents ({', '.join(named)}) "
                             f"than {corpus}'s; give --corpus the one it was trained on")
    model, _ = model_from_onnx(folder, family)
    tok = CharTokenizer.load(folder / "vocab.json")
    size = family_entry(family).eval_size
    result = {split: evaluate_model(family, model, tok, corpus, split=split, **size) for split in splits}
    if write_card:
        card.setdefault("evaluation", {}).update(result)
        write_json(card_path, card)
    return result
