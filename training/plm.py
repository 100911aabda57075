"""Permutation language modelling (XLNet's worldview, Yang et al. 2019) on the one Transformer.

GPT predicts each character from the ones on its left; BERT from both sides, but its hidden
characters are guessed independently of each other. PLM draws a random order of the positions (a
factorization order) for every sequence and predicts the last characters in that order, each from
every character that comes earlier in the order: on average half of the line, from both sides, and
still one character after another, as GPT does. "Permutation can be done by setting appropriate
masks for self-attention": nothing moves, only who may look at whom.

A position cannot both be predicted and show its own character, so XLNet keeps two streams: the
content stream (each position's character, seeing the characters up to its own place in the order)
and the query stream (a position without its character, seeing only the characters before it in
the order), which makes the prediction. Here the two streams are one sequence with one mask: the
line's T characters (the content stream), then one query token per predicted position ([MASK] at
that position's position embedding). Every layer's query reads the layer below's content, exactly
as XLNet's two-stream attention does; nothing else is new. This is the two-stream variant, not the
simpler content-only one: content-only would let a position see its own character.

The order rides in one integer per token, `ranks`: 2 r + 1 for a character whose place in the
order is r, 2 r for the query of the position at place r. Then

    allowed(i, j) = j == i  or  (j is a character (odd rank)  and  ranks[j] <= ranks[i])

gives both streams: a character sees the characters up to its own place; a query sees the
characters strictly before its place (and its own query token: a position, no character).
The last 15 % of each order is predicted (XLNet predicts the last 1/6 or 1/7; 15 % is BERT's share,
for a comparison at equal difficulty of the number hidden)."""
from __future__ import annotations

import torch
import torch.nn as nn

from app.contract import MASK

from .data import CLMBatches
from .model import Transformer, init_weights
from .objectives import Objective, cross_entropy

PREDICTED = 0.15  # the share of each line predicted: the last places of its order


def n_predicted(length: int) -> int:
    return max(1, round(length * PREDICTED))


class PLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.transformer = Transformer(cfg)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        init_weights(self, cfg.n_layer)
        self.lm_head.weight = self.transformer.tok_emb.weight  # weight tying

    def forward(self, idx, position_ids, ranks):
        # idx, position_ids, ranks: (B, S): the characters, then the queries (see the module's words)
        h = self.transformer(idx, position_ids, attn_mask=self.allowed(ranks))  # (B, S, C)
        return self.char_logits(h)  # (B, S, vocab): read at the queries

    def reading(self, idx, position_ids, ranks):
        """(positions, segments, allowed): what forward() gives the Transformer (see GPT.reading)."""
        return position_ids, None, self.allowed(ranks)

    def allowed(self, ranks):
        # THE line that makes this a PLM: each token sees the characters before it in a random order.
        S = ranks.shape[1]
        character = (ranks % 2 == 1)[:, None, :]  # (B, 1, S): key j is a character
        earlier = ranks[:, None, :] <= ranks[:, :, None]  # (B, S, S): key j no later than query i
        itself = torch.eye(S, dtype=torch.bool, device=ranks.device)[None]
        return ((character & earlier) | itself)[:, None]  # (B, 1, S, S)

    def char_logits(self, h):
        return self.lm_head(h)


class PLMExport(nn.Module):
    """plm.onnx: input_ids, position_ids, ranks -> logits."""

    def __init__(self, model):
        super().__init__()
        self.plm = model  # named by the family: the graph's weights are plm.* (inspect_export reads them back)

    def forward(self, input_ids, position_ids, ranks):
        return self.plm(input_ids, position_ids, ranks)


def _orders(ids: torch.Tensor, gen: torch.Generator | None) -> torch.Tensor:
    return torch.stack([torch.randperm(ids.shape[1], generator=gen) for _ in range(ids.shape[0])])


# plm.onnx's own inputs as they are met in use, for the parity checks (its entry's `feeds`): a random
# order over the positions, one per row (position_ids drawn first: the graph's input order)
FEEDS = {"position_ids": _orders, "ranks": _orders}


def permuted(ids: torch.Tensor, gen: torch.Generator) -> dict:
    """One line (T,) -> the two streams in one sequence (T + n) for a random order: idx, position_ids,
    ranks, labels (the character at each query, -100 elsewhere)."""
    T = ids.shape[0]
    n = n_predicted(T)
    order = torch.randperm(T, generator=gen)  # order[r] = the position at place r
    place = torch.empty(T, dtype=torch.long)
    place[order] = torch.arange(T)
    targets = order[T - n:]  # the last places, in order
    idx = torch.cat([ids, torch.full((n,), MASK, dtype=torch.long)])
    position_ids = torch.cat([torch.arange(T), targets])
    ranks = torch.cat([2 * place + 1, 2 * place[targets]])
    labels = torch.cat([torch.full((T,), -100, dtype=torch.long), ids[targets]])
    return {"idx": idx, "position_ids": position_ids, "ranks": ranks, "labels": labels}


def window_length(context: int) -> int:
    """The longest line whose two streams fit the context (the position embeddings): T + n <= context."""
    length = context
    while length > 1 and length + n_predicted(length) > context:
        length -= 1
    return length


class PermutationLM(Objective):
    """PLM: a random order per line; the last 15 % of it predicted, each from the characters earlier in it."""

    def __init__(self, cfg, tok):
        super().__init__(cfg, tok)
        self.length = window_length(cfg.context)

    def source(self, docs_ids, seed: int):
        return CLMBatches(docs_ids, self.length, seed)

    def batch(self, source, batch_size: int, gen: torch.Generator) -> dict:
        windows, _ = source.sample(batch_size)  # (B, T)
        rows = [permuted(w, gen) for w in windows]
        return {k: torch.stack([r[k] for r in rows]) for k in rows[0]}

    def loss(self, model, batch: dict):
        logits = model(batch["idx"], batch["position_ids"], batch["ranks"])
        loss = cross_entropy(logits, batch["labels"])
        return loss, {"loss": loss}


# ---- held-out evaluation and the live view ----

@torch.no_grad()
def _scores(model, batches, unigram: int | None = None) -> dict:
    right = nats = n = 0
    for batch in batches:
        where = batch["labels"] != -100
        target = batch["labels"][where]
        n += int(where.sum())
        if unigram is not None:
            right += int((target == unigram).sum())
            continue
        logits = model(batch["idx"], batch["position_ids"], batch["ranks"])[where].float()
        right += int((logits.argmax(-1) == target).sum())
        nats += float(torch.nn.functional.cross_entropy(logits, target, reduction="sum"))
    out = {"predicted_top1": right / max(n, 1), "predicted": n}
    if unigram is None:
        out["nats_per_char"] = nats / max(n, 1)
    return out


def evaluate_plm(model, tok, docs, n_windows: int = 1000, seed: int = 2024) -> dict:
    """Held-out PLM: the last 15 % of a random order, each character guessed from the ones earlier in
    the order (top-1), against the same architecture untrained and the most common character."""
    from .evaluate import most_common_id, objective_batches

    was_training = model.training
    model.eval()
    objective = PermutationLM(model.cfg, tok)
    batches = objective_batches(objective, tok, docs, n_windows, seed)
    trained = _scores(model, batches)
    torch.manual_seed(seed)
    random_init = _scores(type(model)(model.cfg).eval(), batches)
    unigram = _scores(None, batches, unigram=most_common_id(tok))
    model.train(was_training)
    return {**trained, "random_init": random_init, "unigram_baseline": unigram,
            "recipe": {"predicted": PREDICTED, "window": objective.length, "streams": "two (content and query)"}}


def plm_fill(model, tok, prompt: str, probe: str, positions: list[int]) -> dict:
    """The live view: the probe line in one fixed random order, its last 15 % guessed (top-1)."""
    was_training = model.training
    model.eval()
    ids = torch.tensor([int(i) for i in tok.encode(probe)][: window_length(model.cfg.context)])
    row = permuted(ids, torch.Generator().manual_seed(0))
    with torch.no_grad():
        logits = model(row["idx"][None], row["position_ids"][None], row["ranks"][None])[0]
    model.train(was_training)
    T = len(ids)
    guesses = []
    for q in range(T, len(row["idx"])):
        p = torch.softmax(logits[q, tok.first_char_id:].double(), -1)
        j = int(p.argmax())
        guesses.append({"position": int(row["position_ids"][q]), "char": tok.itos[tok.first_char_id + j],
                        "prob": round(float(p[j]), 4), "truth": tok.itos[int(ids[row["position_ids"][q]])]})
    hidden = {g["position"] for g in guesses}
    return {"probe": tok.decode(ids.tolist()), "masked": "".join("_" if i in hidden else tok.itos[int(t)] for i, t in enumerate(ids)),
            "guesses": guesses, "correct": sum(g["char"] == g["truth"] for g in guesses)}
