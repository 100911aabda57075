"""BERT's next-sentence prediction: the quiz (a fixed bank shipped with the models, so any
worker answers any id) and free-form pairs."""
from __future__ import annotations

import random
from typing import Annotated

from fastapi import APIRouter, Query, Request

from .. import deps
from ..classes import embargo
from ..errors import ApiError
from ..inputs import label, pair_ids, quiz_bank
from ..schemas import NSPRequest, NSPResponse, QuizAnswer, QuizItem, QuizQuery, QuizResult

router = APIRouter(tags=["nsp"])


@router.get("/api/nsp/quiz", response_model=QuizItem, responses=deps.errors(404, 422, 503))
def quiz_item(params: Annotated[QuizQuery, Query()], registry: deps.RegistryDep, request: Request):
    """One quiz item: does sentence B follow sentence A in the play? A random one is none a live class
    session holds back (app/classes/embargo.py), while there are others."""
    bank = quiz_bank(registry.get(params.model))
    index = params.index
    if index is None:
        held = embargo.held(request, "nsp")
        free = [k for k, it in enumerate(bank) if it["id"] not in held] or list(range(len(bank)))
        index = random.choice(free)
    elif not 0 <= index < len(bank):
        raise ApiError(f"index must be between 0 and {len(bank) - 1}", "index")
    item = bank[index]
    return {"id": item["id"], "index": index, "a": item["a"], "b": item["b"], "count": len(bank)}


@router.post("/api/nsp/quiz/{item_id}/answer", response_model=QuizResult,
             responses=deps.held_by_a_class(deps.INFERENCE_ERRORS))
def quiz_answer(item_id: str, req: QuizAnswer, registry: deps.RegistryDep, request: Request):
    """Check a guess against the truth and against the model's own guess (409 while a class session
    answers this item and the teacher has not revealed it)."""
    embargo.check(request, "nsp", item_id)
    models = registry.get(req.model)
    model = registry.bert(req.model)
    item = next((it for it in quiz_bank(models) if it["id"] == item_id), None)
    if item is None:
        raise ApiError(f"no quiz item with id {item_id!r}", "id", status=404)
    truth = label(bool(item["is_next"]))
    a_ids, b_ids, _ = pair_ids(model, item["a"], item["b"])
    p = model.p_is_next(a_ids, b_ids)
    model_guess = label(p >= 0.5)
    return deps.respond(QuizResult, {
        "id": item["id"], "correct": req.guess == truth, "truth": truth, "p_is_next": p,
        "model_guess": model_guess, "model_correct": model_guess == truth,
        "source_a": item.get("source_a", ""), "source_b": item.get("source_b", "")})


@router.post("/api/nsp/predict", response_model=NSPResponse, responses=deps.INFERENCE_ERRORS)
def predict(req: NSPRequest, registry: deps.RegistryDep):
    """P(IsNext) for any pair: [CLS] a [SEP] b [SEP], segment 0 for [CLS] a [SEP], 1 for b [SEP]."""
    model = registry.bert(req.model)
    a_ids, b_ids, unknown = pair_ids(model, req.a, req.b)
    p = model.p_is_next(a_ids, b_ids)
    return deps.respond(NSPResponse, {"p_is_next": p, "prediction": label(p >= 0.5), "unknown_chars": unknown})
