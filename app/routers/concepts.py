"""The concept check: a short quiz on the seed chapters' ideas, each answer explained and linked
to the applet that shows it live. The questions are data (app/concepts.json). `order` (a class
set) fixes the order of the questions so a whole class works through the same sequence."""
from __future__ import annotations

import json
import random
from functools import lru_cache
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from .. import deps
from ..errors import ApiError
from ..lesson_schemas import ConceptAnswer, ConceptQuiz, ConceptResult
from ..schemas import MAX_SEED

router = APIRouter(tags=["lesson"])
BANK = Path(__file__).resolve().parents[1] / "concepts.json"


@lru_cache(maxsize=1)
def bank() -> list[dict]:
    items = json.loads(BANK.read_text(encoding="utf-8"))["questions"]
    for q in items:  # a broken bank fails at the first request, loudly, not on one question
        if not (q["id"] and q["question"] and 2 <= len(q["choices"]) <= 10 and 0 <= q["answer"] < len(q["choices"])):
            raise ValueError(f"concepts.json: question {q.get('id')!r} is malformed")
    return items


def public(q: dict, number: int) -> dict:
    return {"id": q["id"], "number": number, "topic": q["topic"], "question": q["question"],
            "choices": q["choices"], "applet": q["applet"], "applet_label": q["applet_label"]}


@router.get("/api/concepts", response_model=ConceptQuiz, responses=deps.errors(422))
def concepts(order: Annotated[int | None, Query(ge=0, le=MAX_SEED, description=(
        "A class set: the seed of the question order (the same seed gives every student the same order). "
        "Omitted = the bank's own order."))] = None):
    """The questions (without their answers), in the bank's order or in the order of a class set."""
    items = list(bank())
    if order is not None:
        random.Random(order).shuffle(items)
    return {"order": order, "questions": [public(q, k + 1) for k, q in enumerate(items)]}


@router.post("/api/concepts/{question_id}/answer", response_model=ConceptResult, responses=deps.errors(400, 404, 413, 422))
def answer(question_id: str, req: ConceptAnswer):
    """Check an answer; every answer, right or wrong, comes with the explanation and the applet to try."""
    q = next((q for q in bank() if q["id"] == question_id), None)
    if q is None:
        raise ApiError(f"no concept question with id {question_id!r}", "id", status=404)
    if req.choice >= len(q["choices"]):
        raise ApiError(f"choice must be between 0 and {len(q['choices']) - 1}", "choice")
    return {"id": q["id"], "correct": req.choice == q["answer"], "answer": q["answer"],
            "explanation": q["explanation"], "applet": q["applet"], "applet_label": q["applet_label"]}


@router.api_route("/concepts", methods=["GET", "HEAD"], response_class=HTMLResponse, include_in_schema=False)
def concepts_page(request: Request):
    return deps.render(request, "concepts.html", "concepts", "Concept check")
