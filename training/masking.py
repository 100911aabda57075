"""Which characters a masked-language-model objective hides: per character, in spans, or whole words.

All three select about `rate` of the ordinary characters (specials are never selected) and give
each selected *unit* one 80/10/10 decision (80 % [MASK], 10 % a random character, 10 % left as it
is; labels -100 everywhere else, as Hugging Face's heads ignore):

    char  every character on its own (BERT)
    span  contiguous runs, lengths from a geometric distribution of mean MEAN_SPAN, at most
          MAX_SPAN (SpanBERT's selection; T5 instead replaces each span with one sentinel token
          and has a decoder write the spans out, which is not done here)
    word  whole words (runs of letters, digits and _), as BERT's whole-word masking

Vectorised over the batch: a unit's decision is drawn at its first character and carried to the
rest of the unit by a running maximum of start positions (`carry`), so no Python loop per row.
"""
from __future__ import annotations

import torch

from app.contract import MASKING_SCHEMES as SCHEMES

from .tokenizer import MASK

MEAN_SPAN = 3.0
MAX_SPAN = 10
P_MASK, P_RANDOM = 0.8, 0.1


def carry(starts: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Each position takes `values` at the last start at or before it (in its row).
    starts: bool (B, T); values: (B, T). Positions before a row's first start take values[:, 0]."""
    T = starts.size(1)
    idx = torch.where(starts, torch.arange(T), torch.zeros((), dtype=torch.long))  # (B, T)
    last = idx.cummax(dim=1).values  # (B, T) index of the unit's first character
    return values.gather(1, last)


def word_table(itos: list[str]) -> torch.Tensor:
    """(vocab,) bool: which token ids are word characters."""
    return torch.tensor([len(ch) == 1 and (ch.isalnum() or ch == "_") for ch in itos])


def select(ids: torch.Tensor, scheme: str, rate: float, gen: torch.Generator, ordinary: torch.Tensor,
           is_word: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(selected, unit_draw): bool (B, T) of the selected positions and, per position, its unit's
    uniform draw in [0, 1) (one per unit), for the 80/10/10 decision."""
    B, T = ids.shape
    if scheme == "char":
        selected = (torch.rand(ids.shape, generator=gen) < rate) & ordinary
        return selected, torch.rand(ids.shape, generator=gen)
    draw = torch.rand(ids.shape, generator=gen)
    if scheme == "word":
        if is_word is None:
            raise ValueError("whole-word masking needs the vocabulary's word characters")
        inside = is_word[ids] & ordinary  # (B, T)
        starts = inside & ~torch.nn.functional.pad(inside[:, :-1], (1, 0), value=False)
        # Words hold most but not all characters: pick words at rate / (share of word characters).
        share = float(inside.sum()) / max(1.0, float(ordinary.sum()))
        chosen = torch.rand(ids.shape, generator=gen) < min(1.0, rate / max(share, 1e-6))
        selected = carry(starts, chosen & starts) & inside
        return selected, carry(starts, draw)
    if scheme != "span":
        raise ValueError(f"masking: choose one of {', '.join(SCHEMES)} (got {scheme!r})")
    # Span starts at rate / MEAN_SPAN per character (a little more, since spans may overlap);
    # a position is covered while some start's end lies beyond it.
    p_start = rate / MEAN_SPAN / max(1e-6, 1.0 - rate / 2)
    starts = (torch.rand(ids.shape, generator=gen) < p_start) & ordinary
    u = torch.rand(ids.shape, generator=gen).clamp_min(1e-12)
    lengths = (torch.log(u) / torch.log1p(torch.tensor(-1.0 / MEAN_SPAN))).floor().long() + 1  # geometric, mean MEAN_SPAN
    lengths = lengths.clamp(max=MAX_SPAN)
    pos = torch.arange(T).expand(B, T)
    ends = torch.where(starts, pos + lengths, torch.zeros_like(pos))
    selected = (ends.cummax(dim=1).values > pos) & ordinary
    return selected, carry(starts, draw)


def mask_tokens(ids: torch.Tensor, vocab_size: int, first_char_id: int, gen: torch.Generator,
                mask_rate: float = 0.15, scheme: str = "char", is_word: torch.Tensor | None = None):
    """BERT's corruption with a masking scheme. Returns (corrupted ids, labels), labels -100 where
    not selected. The char scheme draws exactly as BERT's original recipe (one decision per character)."""
    ordinary = ids >= first_char_id  # specials ([PAD] [CLS] [SEP] ...) are never selected
    selected, r = select(ids, scheme, mask_rate, gen, ordinary, is_word)
    labels = torch.where(selected, ids, torch.full_like(ids, -100))
    to_mask = selected & (r < P_MASK)
    to_random = selected & (r >= P_MASK) & (r < P_MASK + P_RANDOM)
    random_chars = torch.randint(first_char_id, vocab_size, ids.shape, generator=gen)
    corrupted = torch.where(to_mask, torch.full_like(ids, MASK), ids)
    corrupted = torch.where(to_random, random_chars, corrupted)
    return corrupted, labels
