"""GPT vs BERT on the same blank: the thesis side by side. One sentence, one position: GPT guesses
the character from the left context only (its next-character distribution after text[:position],
as /api/next-token gives it), BERT from both sides (the character masked, as /api/mask-fill with
`positions` gives it). Same model set for both; every family whose spec lists the compare page
takes part (app/tasks/compare.py)."""
from __future__ import annotations

from fastapi import APIRouter

from .. import deps
from ..contract.families import for_page
from ..schemas.lessons import CompareRequest, CompareResponse
from ..tasks.compare import compare as compared

router = APIRouter(tags=["lesson"])


@router.post("/api/compare", response_model=CompareResponse, responses=deps.INFERENCE_ERRORS)
def compare(req: CompareRequest, registry: deps.RegistryDep):
    """Each model's guess for the character at `position`, and each model's probability of the
    true character at every position (the strip: where right-hand context matters)."""
    readers = [(s.name, s.label, registry.task(s.name, req.model)) for s in for_page("compare")]
    vocab = registry.get(req.model).vocab
    return deps.respond(CompareResponse, compared(readers, vocab, req.text, req.position, req.top_k, req.strip))
