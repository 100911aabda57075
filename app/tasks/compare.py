"""GPT vs BERT on one blank (the /compare lesson), family-blind: every family whose spec lists the
compare page reads the text its own way (its task's compare_room, compare_guess, compare_strip: GPT
the left of a position, BERT both sides of it masked). Each one's guess at one position, and each
one's probability of the true character at every position. Plain results; inputs arrive checked."""
from __future__ import annotations

import numpy as np

from ..contract import FIRST_CHAR, UNK
from ..errors import ApiError
from ..sampling import entropy, ranked

NOTHING = {"available": False, "p_true": None, "rank": None, "entropy": None, "top": []}


def guess(chars: list[str], p: np.ndarray, true: int, top_k: int, reads: str) -> dict:
    known = true >= FIRST_CHAR
    po = float(p[true - FIRST_CHAR]) if known else None
    return {"available": True, "p_true": po, "rank": int((p > po).sum()) + 1 if known else None,
            "entropy": entropy(p), "top": ranked(chars, p, top_k), "reads": reads}


def compare(readers: list[tuple[str, str, object]], vocab, text: str, pos: int, top_k: int, strip: bool) -> dict:
    """readers: [(family, its label, its task)] in the specs' order -> the body of POST /api/compare."""
    for _, label, task in readers:
        room, why = task.compare_room()
        if why and len(text) > room:  # a reader that cannot take the whole text refuses it
            raise ApiError(f"text is {len(text)} characters long; {label} reads at most {room} ({why})", "text")
    if pos >= len(text):
        raise ApiError(f"position {pos} is out of range for a text of {len(text)} characters", "position")
    ids, unknown = vocab.encode(text)
    out = {"tokens": [vocab.token(t) for t in ids], "position": pos, "char": text[pos] if ids[pos] != UNK else "[UNK]"}
    rows = [{"position": i, "char": vocab.token(t)} for i, t in enumerate(ids)] if strip else None
    for family, _, task in readers:
        p, reads = task.compare_guess(ids, pos)
        out[family] = guess(vocab.chars, p, ids[pos], top_k, reads) if p is not None else {**NOTHING, "reads": reads}
        if rows is not None:
            for row, value in zip(rows, task.compare_strip(ids), strict=True):
                row[family] = value
    return {**out, "strip": rows, "unknown_chars": unknown}
