"""What a live run shows of its models as they train (every ~10 s and with every snapshot): a
seeded GPT continuation and a BERT fill of the probe line (ELECTRA's view is in training/electra.py).
Each view has the family table's signature: f(model, tok, prompt, probe, positions) -> dict.
The random stream is the app's (app.contract.uniform), so the same model gives the same text."""
from __future__ import annotations

from app.contract import uniform

from .settings import FILL_SEED, SAMPLE_CHARS, SAMPLE_SEED, SAMPLE_TEMPERATURE


def gpt_sample(model, tok, prompt: str, probe: str = "", positions=(), n: int = SAMPLE_CHARS,
               seed: int = SAMPLE_SEED, temperature: float = SAMPLE_TEMPERATURE) -> dict:
    """n characters after `prompt`, drawn by inverse CDF over the ordinary characters (specials are
    never drawn) with the app's seeded stream, so the same model gives the same text."""
    import torch

    first = tok.first_char_id
    ids = [int(i) for i in tok.encode(prompt)] or [tok.stoi.get("\n", first)]
    out = []
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for i in range(n):
            x = torch.tensor([ids[-model.cfg.context:]])
            logits = model(x)[0, -1, first:].double() / temperature
            cdf = torch.cumsum(torch.softmax(logits, -1), 0)
            j = min(int(torch.searchsorted(cdf, uniform(seed, i) * float(cdf[-1]), right=True)), len(cdf) - 1)
            ids.append(first + j)
            out.append(tok.itos[first + j])
    model.train(was_training)
    return {"prompt": prompt, "text": "".join(out), "seed": seed, "temperature": temperature}


def position_kind(text: str, i: int) -> str:
    """What a masked position asks: a word's first letter, a letter inside a word, a space (or
    line break), or punctuation and digits. Word starts are the hardest to guess."""
    ch = text[i]
    if ch.isspace():
        return "space"
    if not ch.isalpha():
        return "other"
    return "inside" if i > 0 and text[i - 1].isalpha() else "start"


def fill_positions(probe: str, seed: int = FILL_SEED, rate: float = 0.15, least: int = 4) -> list[int]:
    """Fixed positions to mask, a fair mix: ~15 % of the probe (at least `least`), one of each kind
    of position the probe has (position_kind), the rest drawn uniformly over the whole line as
    training draws them, all in the seeded stream's order. (Letters only, mostly word starts,
    would hide what BERT learns: it says "0 right" while its held-out top-1 climbs.)"""
    if not probe:
        return []
    ranked = sorted(range(len(probe)), key=lambda i: uniform(seed, i))
    k = min(len(probe), max(least, round(rate * len(probe))))
    chosen, kinds = [], set()
    for i in ranked:  # the first of each kind in the seeded order
        kind = position_kind(probe, i)
        if kind not in kinds:
            kinds.add(kind)
            chosen.append(i)
    chosen = chosen[:k]
    chosen += [i for i in ranked if i not in chosen][: k - len(chosen)]
    return sorted(chosen)


def bert_fill(model, tok, prompt: str, probe: str, positions: list[int]) -> dict:
    """[CLS] probe [SEP] with `positions` masked: BERT's top guess and its probability at each."""
    import torch

    from ..tokenizer import CLS, MASK, SEP

    ids = [CLS] + [int(i) for i in tok.encode(probe)][: model.cfg.context - 2] + [SEP]
    for p in positions:
        if p + 1 < len(ids) - 1:
            ids[p + 1] = MASK
    was_training = model.training
    model.eval()
    with torch.no_grad():
        mlm, _ = model(torch.tensor([ids]), torch.zeros(1, len(ids), dtype=torch.long))
        probs = torch.softmax(mlm[0, :, tok.first_char_id:].double(), -1)
    model.train(was_training)
    filled, guesses = list(probe), []
    for p in positions:
        if p + 1 >= len(ids) - 1:
            continue
        j = int(probs[p + 1].argmax())
        ch = tok.itos[tok.first_char_id + j]
        filled[p] = ch
        guesses.append({"position": p, "char": ch, "prob": round(float(probs[p + 1, j]), 4), "truth": probe[p]})
    masked = "".join("_" if i in set(positions) else ch for i, ch in enumerate(probe))
    return {"probe": probe, "masked": masked, "filled": "".join(filled), "guesses": guesses,
            "correct": sum(g["char"] == g["truth"] for g in guesses)}
