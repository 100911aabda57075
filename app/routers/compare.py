"""GPT vs BERT on the same blank: the thesis side by side. One sentence, one position: GPT guesses
the character from the left context only (its next-character distribution after text[:position],
as /api/next-token gives it), BERT from both sides (the character masked, as /api/mask-fill with
`positions` gives it). Same model set for both."""
from __future__ import annotations

from fastapi import APIRouter, Request

from .. import deps
from ..contract import FIRST_CHAR, MASK, UNK
from ..errors import ApiError
from ..schemas.lessons import CompareRequest, CompareResponse
from ..sampling import softmax
from ..tasks.compare import guess, strip_of
from ..inputs import check_length

router = APIRouter(tags=["lesson"])


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
