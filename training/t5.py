"""T5's worldview on the one Transformer: span corruption, as a prefix language model.

T5 (Raffel et al. 2020) hides short spans of the input, each behind one sentinel token, and trains
the model to write the missing spans back, each after its sentinel. T5 itself is an encoder-decoder;
here it is the same Transformer as GPT and BERT with a third attention mask, a prefix LM:

    the corrupted input (and the [SEP] after it) is the prefix: its positions see each other, both
    sides, as BERT's do;  the spans it writes come after: each sees the whole prefix and the spans
    written before it, never ahead, as GPT's do.

    allowed(i, j) = (j <= i  or  i and j both in the prefix)  and  j is not [PAD]

One sequence: `corrupted text [SEP] <S0> span0 <S1> span1 ... [SEP]`. 15 % of the characters are
hidden, in spans of 3 on average (T5's own draw: the hidden and the kept characters are each cut
into as many runs at random, and the runs alternate, starting with kept text). The loss is on the
spans' part only: every position from the prefix's last one predicts the next token.

Sentinels: T5_SENTINELS ids after the characters (vocabulary size + k), the model's own specials:
the shared vocab.json and every other family keep their ids; its card's vocab_size is the shared
one and its logits carry the sentinels after it (app/contract/families.py)."""
from __future__ import annotations

from dataclasses import replace

import torch
import torch.nn as nn

from app.contract import SEP
from app.contract.families import T5_SENTINELS

from .data import CLMBatches
from .model import Transformer, init_weights
from .objectives import Objective, cross_entropy

NOISE = 0.15  # the share of characters hidden
MEAN_SPAN = 3.0  # characters per hidden span, on average


class T5(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg  # vocab_size: the shared characters and specials (the card's)
        self.vocab = cfg.vocab_size + T5_SENTINELS  # with the sentinels, this model's own
        self.transformer = Transformer(replace(cfg, vocab_size=self.vocab))
        self.lm_head = nn.Linear(cfg.n_embd, self.vocab, bias=False)
        init_weights(self, cfg.n_layer)
        self.lm_head.weight = self.transformer.tok_emb.weight  # weight tying

    def forward(self, idx, prefix_mask):
        B, T = idx.shape
        positions = torch.arange(T, device=idx.device)
        h = self.transformer(idx, positions, attn_mask=self.allowed(idx, prefix_mask))  # (B, T, C)
        return self.char_logits(h)  # (B, T, vocab + sentinels)

    def reading(self, idx, prefix_mask):
        """(positions, segments, allowed): what forward() gives the Transformer (see GPT.reading)."""
        return torch.arange(idx.shape[1], device=idx.device), None, self.allowed(idx, prefix_mask)

    def allowed(self, idx, prefix_mask, pad_id: int = 0):
        # THE line that makes this a prefix LM: both sides inside the prefix, left only after it.
        T = idx.shape[1]
        left = torch.ones(T, T, dtype=torch.bool, device=idx.device).tril()  # (T, T)
        prefix = prefix_mask.bool()
        both = prefix[:, :, None] & prefix[:, None, :]  # (B, T, T)
        return ((left[None] | both) & (idx != pad_id)[:, None, :])[:, None]  # (B, 1, T, T)

    def char_logits(self, h):
        return self.lm_head(h)


class T5Export(nn.Module):
    """t5.onnx: input_ids, prefix_mask (1 = prefix) -> logits over the characters and sentinels."""

    def __init__(self, model):
        super().__init__()
        self.t5 = model  # named by the family: the graph's weights are t5.* (inspect_export reads them back)

    def forward(self, input_ids, prefix_mask):
        return self.t5(input_ids, prefix_mask)


# t5.onnx's own input as it is met in use, for the parity checks (its entry's `feeds`): a prefix of half the sequence
FEEDS = {"prefix_mask": lambda ids, gen: (torch.arange(ids.shape[1]) < ids.shape[1] // 2).long().expand_as(ids)}


# ---- span corruption ----

def _cuts(total: int, parts: int, gen: torch.Generator) -> list[int]:
    """`total` cut into `parts` runs of at least 1, every such cut equally likely."""
    points = sorted((torch.randperm(total - 1, generator=gen)[:parts - 1] + 1).tolist())
    return [b - a for a, b in zip([0, *points], [*points, total])]


def span_counts(length: int) -> tuple[int, int]:
    """(hidden characters, spans) of a window of `length` characters."""
    hidden = max(1, round(length * NOISE))
    spans = max(1, min(round(hidden / MEAN_SPAN), hidden, length - hidden, T5_SENTINELS))
    return hidden, spans


def draw_spans(length: int, gen: torch.Generator) -> list[tuple[int, int]]:
    """The hidden spans [start, end) of a window, T5's way: kept and hidden runs alternating."""
    hidden, spans = span_counts(length)
    kept_runs, hidden_runs = _cuts(length - hidden, spans, gen), _cuts(hidden, spans, gen)
    out, at = [], 0
    for kept, run in zip(kept_runs, hidden_runs):
        at += kept
        out.append((at, at + run))
        at += run
    return out


def corrupt(ids: list[int], spans: list[tuple[int, int]], vocab_size: int) -> tuple[list[int], list[int]]:
    """(prefix: the text with each span replaced by its sentinel, then [SEP];
        target: each sentinel followed by its span, then [SEP])."""
    prefix, target, last = [], [], 0
    for k, (start, end) in enumerate(spans):
        prefix += [*ids[last:start], vocab_size + k]
        target += [vocab_size + k, *ids[start:end]]
        last = end
    return [*prefix, *ids[last:], SEP], [*target, SEP]


def sequence(prefix: list[int], target: list[int]) -> tuple[list[int], list[int], list[int]]:
    """(ids, prefix_mask, labels): labels[t] = ids[t + 1] where that is a token of the target, else -100."""
    ids = [*prefix, *target]
    labels = [-100] * len(ids)
    for t in range(len(prefix) - 1, len(ids) - 1):
        labels[t] = ids[t + 1]
    return ids, [1] * len(prefix) + [0] * len(target), labels


def window_length(context: int) -> int:
    """The longest text window whose corrupted sequence fits the context: L + 2 spans + 2 [SEP]."""
    length = context
    while length > 2 and length + 2 * span_counts(length)[1] + 2 > context:
        length -= 1
    return length


class SpanCorruption(Objective):
    """T5: windows of text, 15 % hidden in spans of 3 on average; the loss on the spans written back."""

    def __init__(self, cfg, tok):
        super().__init__(cfg, tok)
        self.length = window_length(cfg.context)

    def source(self, docs_ids, seed: int):
        return CLMBatches(docs_ids, self.length, seed)

    def batch(self, source, batch_size: int, gen: torch.Generator) -> dict:
        windows, _ = source.sample(batch_size)  # (B, L)
        rows = [sequence(*corrupt(w.tolist(), draw_spans(self.length, gen), self.tok.vocab_size)) for w in windows]
        ids, prefix, labels = (torch.tensor([r[k] for r in rows]) for k in range(3))  # (B, T) each, one length
        return {"idx": ids, "prefix_mask": prefix, "labels": labels}

    def loss(self, model, batch: dict):
        logits = model(batch["idx"], batch["prefix_mask"])  # (B, T, vocab + sentinels)
        loss = cross_entropy(logits, batch["labels"])
        return loss, {"loss": loss}


# ---- held-out evaluation and the live view ----

@torch.no_grad()
def _span_scores(model, batches, first_char: int, vocab_size: int, unigram: int | None = None) -> dict:
    """Top-1 and nats per character over the span characters written back (not the sentinels or the
    closing [SEP]: those say where a span ends, the characters are what was hidden). The model reads
    the true spans so far (teacher forcing), as in training. unigram: always that character instead."""
    right = nats = n = 0
    for batch in batches:
        labels = batch["labels"]
        chars = (labels >= first_char) & (labels < vocab_size)
        target = labels[chars]
        n += int(chars.sum())
        if unigram is not None:
            right += int((target == unigram).sum())
            continue
        logits = model(batch["idx"], batch["prefix_mask"])[chars].float()
        right += int((logits.argmax(-1) == target).sum())
        nats += float(torch.nn.functional.cross_entropy(logits, target, reduction="sum"))
    out = {"span_char_top1": right / max(n, 1), "span_chars": n}
    if unigram is None:
        out["span_nats_per_char"] = nats / max(n, 1)
    return out


def evaluate_t5(model, tok, docs, n_windows: int = 1000, seed: int = 2024) -> dict:
    """Held-out span corruption: how many hidden characters T5 writes back right (top-1, reading the
    rest of the line from both sides and its own spans so far), against the same architecture
    untrained and against always writing the most common character."""
    from .evaluate import most_common_id, objective_batches
    from .t5_free import HOW_TEACHER_FORCED, first_windows, free_running

    was_training = model.training
    model.eval()
    objective = SpanCorruption(model.cfg, tok)
    batches = objective_batches(objective, tok, docs, n_windows, seed)
    trained = _span_scores(model, batches, tok.first_char_id, tok.vocab_size)
    torch.manual_seed(seed)
    random_init = _span_scores(type(model)(model.cfg).eval(), batches, tok.first_char_id, tok.vocab_size)
    unigram = _span_scores(None, batches, tok.first_char_id, tok.vocab_size, unigram=most_common_id(tok))
    # what the page shows (issue 54): the first 200 of these windows written freely, by the page's own rule
    free = free_running(model, first_windows(batches), tok.vocab_size, model.cfg.context)
    model.train(was_training)
    return {**trained, "measured": HOW_TEACHER_FORCED, "free_running": free, "random_init": random_init,
            "unigram_baseline": unigram,
            "recipe": {"noise": NOISE, "mean_span": MEAN_SPAN, "window": objective.length, "sentinels": T5_SENTINELS}}


@torch.no_grad()
def write_spans(model, prefix: list[int], n_spans: int, limit: int) -> list[tuple[int, float]]:
    """Greedy: the tokens T5 writes after `prefix`, each with its probability, until it closes the
    last span ([SEP]), has written `n_spans` sentinels past the first, or reaches `limit` tokens."""
    ids, out = list(prefix), []
    while len(out) < limit and len(ids) < model.cfg.context:
        x = torch.tensor([ids])
        mask = torch.tensor([[1] * len(prefix) + [0] * (len(ids) - len(prefix))])
        p = torch.softmax(model(x, mask)[0, -1].double(), -1)
        token = int(p.argmax())
        out.append((token, float(p[token])))
        ids.append(token)
        if token == SEP:
            break
    return out


def t5_fill(model, tok, prompt: str, probe: str, positions: list[int]) -> dict:
    """The live view: the probe line with spans hidden (a fixed draw), and what T5 writes back."""
    was_training = model.training
    model.eval()
    ids = [int(i) for i in tok.encode(probe)][: window_length(model.cfg.context)]
    spans = draw_spans(len(ids), torch.Generator().manual_seed(0)) if len(ids) > 3 else []
    prefix, _ = corrupt(ids, spans, tok.vocab_size)
    written = write_spans(model, prefix, len(spans), 4 * len(ids) // 10 + 2 * len(spans) + 2)
    model.train(was_training)
    texts, k = [""] * len(spans), -1
    for token, _ in written:
        if token >= tok.vocab_size:
            k = token - tok.vocab_size
        elif token == SEP:
            break
        elif 0 <= k < len(spans) and token >= tok.first_char_id:
            texts[k] += tok.itos[token]
    shown = [{"span": k, "truth": probe[s:e], "written": texts[k]} for k, (s, e) in enumerate(spans)]
    corrupted = "".join(f"⟨{k}⟩" if tok.vocab_size <= t else tok.itos[t] for k, t in
                        [(t - tok.vocab_size if t >= tok.vocab_size else 0, t) for t in prefix[:-1]])
    return {"probe": probe[:len(ids)], "corrupted": corrupted, "spans": shown,
            "correct": sum(a == b for sp in shown for a, b in zip(sp["truth"], sp["written"])),
            "hidden": sum(len(sp["truth"]) for sp in shown)}
