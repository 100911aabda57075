"""GPT vs BERT on the same blank: the thesis side by side. One sentence, one position: GPT guesses
the character from the left context only (its next-character distribution after text[:position],
as /api/next-token gives it), BERT from both sides (the character masked, as /api/mask-fill with
`positions` gives it). Same model set for both."""
from __future__ import annotations

import numpy as np
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from .. import deps
from ..contract import CLS, FIRST_CHAR, MASK, SEP, UNK
from ..errors import ApiError
from ..lesson_schemas import CompareRequest, CompareResponse
from ..sampling import entropy, softmax
from .mask_fill import check_length

router = APIRouter(tags=["lesson"])


def guess(p: np.ndarray, true: int, top_k: int, ranked, reads: str) -> dict:
    known = true >= FIRST_CHAR
    po = float(p[true - FIRST_CHAR]) if known else None
    return {"available": True, "p_true": po, "rank": int((p > po).sum()) + 1 if known else None,
            "entropy": entropy(p), "top": ranked(p, top_k), "reads": reads}


def strip_of(gpt, bert, ids: list[int]) -> list[dict]:
    """Both models' probability of the true character at every position."""
    n = len(ids)
    # GPT: one forward over the text gives p(char i | chars < i) at every i (row i - 1).
    gpt_probs = softmax(gpt.logits(ids[:gpt.context])[:, FIRST_CHAR:]) if n > 1 else np.zeros((0, 0))
    # BERT: one forward per position, each with that character masked (a batch of n rows).
    batch = np.tile(np.asarray([CLS, *ids, SEP], dtype=np.int64), (n, 1))
    batch[np.arange(n), np.arange(n) + 1] = MASK
    with bert.gate:
        mlm, _ = bert.session.run(None, {"input_ids": batch, "token_type_ids": np.zeros_like(batch)})
    bert_probs = softmax(mlm[np.arange(n), np.arange(n) + 1, FIRST_CHAR:])
    strip = []
    for i, t in enumerate(ids):
        known = t >= FIRST_CHAR
        g = float(gpt_probs[i - 1, t - FIRST_CHAR]) if known and 0 < i <= gpt_probs.shape[0] else None
        strip.append({"position": i, "char": bert.vocab.token(t), "gpt": g,
                      "bert": float(bert_probs[i, t - FIRST_CHAR]) if known else 0.0})
    return strip


@router.post("/api/compare", response_model=CompareResponse, responses=deps.INFERENCE_ERRORS)
def compare(req: CompareRequest, registry: deps.RegistryDep):
    """Both models' guesses for the character at `position`, and both models' probability of the
    true character at every position (the strip: where right-hand context matters)."""
    gpt, bert = registry.gpt(req.model), registry.bert(req.model)
    check_length(len(req.text), bert.context)
    if req.position >= len(req.text):
        raise ApiError(f"position {req.position} is out of range for a text of {len(req.text)} characters", "position")
    ids, unknown = bert.vocab.encode(req.text)
    n, pos = len(ids), req.position
    strip = strip_of(gpt, bert, ids) if req.strip else None
    # The chosen position exactly as the two applets compute it.
    if pos == 0:
        g_out = {"available": False, "p_true": None, "rank": None, "entropy": None, "top": [],
                 "reads": "nothing: there is no character to the left of position 0"}
    else:
        logits, used = gpt.next_logits(ids[:pos])
        g_out = guess(softmax(logits[FIRST_CHAR:]), ids[pos], req.top_k, bert.ranked,
                      f"the {used} character{'s' if used != 1 else ''} to the left")
    masked = list(ids)
    masked[pos] = MASK
    b_out = guess(bert.char_probs(masked, [pos])[0], ids[pos], req.top_k, bert.ranked,
                  f"{pos} character{'s' if pos != 1 else ''} to the left and {n - pos - 1} to the right")
    return deps.respond(CompareResponse, {
        "tokens": [bert.vocab.token(t) for t in ids], "position": pos,
        "char": req.text[pos] if ids[pos] != UNK else "[UNK]", "gpt": g_out, "bert": b_out,
        "strip": strip, "unknown_chars": unknown})


@router.api_route("/compare", methods=["GET", "HEAD"], response_class=HTMLResponse, include_in_schema=False)
def compare_page(request: Request):
    return deps.render(request, "compare.html", "compare", "GPT vs BERT on the same blank")
