"""BERT's next-sentence prediction: the quiz (a fixed bank shipped with the models, so any
worker answers any id) and free-form pairs."""
from __future__ import annotations

import random
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse

from .. import deps
from ..inference import BERT, BadInput, Models
from ..schemas import NSPRequest, NSPResponse, QuizAnswer, QuizItem, QuizQuery, QuizResult

router = APIRouter(tags=["nsp"])


def label(is_next: bool) -> str:
    return "IsNext" if is_next else "NotNext"


def quiz_bank(models: Models) -> list[dict]:
    if not models.quiz:
        raise BadInput("the NSP quiz is not installed on this server (see /api/health)", None, status=503)
    return models.quiz


def pair_ids(model: BERT, a: str, b: str) -> tuple[list[int], list[int], list[dict]]:
    room = model.context - 3  # [CLS] a [SEP] b [SEP]
    if len(a) + len(b) > room:
        param = "a" if len(a) >= room else "b"
        raise BadInput(f"a and b together are {len(a) + len(b)} characters; BERT reads at most {room} "
                       f"(its context of {model.context} minus [CLS] and two [SEP])", param)
    a_ids, a_unknown = model.vocab.encode(a)
    b_ids, b_unknown = model.vocab.encode(b)
    unknown = [{**u, "segment": "a"} for u in a_unknown] + [{**u, "segment": "b"} for u in b_unknown]
    return a_ids, b_ids, unknown


@router.get("/api/nsp/quiz", response_model=QuizItem, responses=deps.errors(422, 503))
async def quiz_item(params: Annotated[QuizQuery, Query()], models: Models = Depends(deps.models)):
    """One quiz item: does sentence B follow sentence A in the play?"""
    bank = quiz_bank(models)
    index = params.index
    if index is None:
        index = random.randrange(len(bank))
    elif not 0 <= index < len(bank):
        raise BadInput(f"index must be between 0 and {len(bank) - 1}", "index")
    item = bank[index]
    return {"id": item["id"], "index": index, "a": item["a"], "b": item["b"], "count": len(bank)}


@router.post("/api/nsp/quiz/{item_id}/answer", response_model=QuizResult, responses=deps.errors(400, 404, 413, 422, 503))
def quiz_answer(item_id: str, req: QuizAnswer, models: Models = Depends(deps.models),
                model: BERT = Depends(deps.bert)):
    """Check a guess against the truth and against the model's own guess."""
    item = next((it for it in quiz_bank(models) if it["id"] == item_id), None)
    if item is None:
        raise BadInput(f"no quiz item with id {item_id!r}", "id", status=404)
    truth = label(bool(item["is_next"]))
    a_ids, b_ids, _ = pair_ids(model, item["a"], item["b"])
    p = model.p_is_next(a_ids, b_ids)
    model_guess = label(p >= 0.5)
    return deps.respond(QuizResult, {
        "id": item["id"], "correct": req.guess == truth, "truth": truth, "p_is_next": p,
        "model_guess": model_guess, "model_correct": model_guess == truth,
        "source_a": item.get("source_a", ""), "source_b": item.get("source_b", "")})


@router.post("/api/nsp/predict", response_model=NSPResponse, responses=deps.errors(400, 413, 422, 503))
def predict(req: NSPRequest, model: BERT = Depends(deps.bert)):
    """P(IsNext) for any pair: [CLS] a [SEP] b [SEP], segment 0 for [CLS] a [SEP], 1 for b [SEP]."""
    a_ids, b_ids, unknown = pair_ids(model, req.a, req.b)
    p = model.p_is_next(a_ids, b_ids)
    return deps.respond(NSPResponse, {"p_is_next": p, "prediction": label(p >= 0.5), "unknown_chars": unknown})


@router.get("/nsp", response_class=HTMLResponse, include_in_schema=False)
def nsp_page(request: Request):
    return deps.render(request, "nsp.html", "nsp", "Next-sentence prediction")
