"""BERT's masked-character prediction: fill [MASK]s, and the 80/10/10 corruption recipe."""
from __future__ import annotations

from fastapi import APIRouter, Request

from .. import deps
from ..tasks import corruption
from ..inputs import check_length, masked_input
from ..schemas import CorruptRequest, CorruptResponse, MaskFillRequest, MaskFillResponse

router = APIRouter(tags=["mask-fill"])


@router.post("/api/mask-fill", response_model=MaskFillResponse, responses=deps.INFERENCE_ERRORS)
def mask_fill(req: MaskFillRequest, registry: deps.RegistryDep):
    """Predict the characters hidden behind each mask (BERT reads the whole text, both directions)."""
    model = registry.bert(req.model)
    deps.check_top_k(req.top_k, model.vocab.size, allow_zero=False)
    ids, masks, originals, unknown = masked_input(model.vocab, req.text, req.positions, model.context)
    results = model.fill(ids, masks, req.top_k, originals)
    return deps.respond(MaskFillResponse, {"tokens": [model.vocab.token(t) for t in ids],
                                           "unknown_chars": unknown, "masks": results})


@router.post("/api/mask-fill/corrupt", response_model=CorruptResponse, responses=deps.INFERENCE_ERRORS)
def corrupt(req: CorruptRequest, registry: deps.RegistryDep):
    """Apply BERT's pretraining corruption (select each character with probability mask_rate; of
    those 80 % [MASK], 10 % a random character, 10 % unchanged) and show what the model recovers."""
    model = registry.bert(req.model)
    check_length(len(req.text), model.context)
    ids, unknown = model.vocab.encode(req.text)
    out = corruption.demo(model, req.text, ids, "char", req.mask_rate, 3.0, req.seed)
    return deps.respond(CorruptResponse, {"tokens": [model.vocab.token(t) for t in ids], "unknown_chars": unknown, **out})
