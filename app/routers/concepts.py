"""The concept check: a short quiz on the seed chapters' ideas, each answer explained and linked
to the applet that shows it live. The questions are data (app/concepts.json): each choice that is
not the key says why it is wrong. `order` (a class set) shuffles the questions and each question's
choices with that seed, so a whole class works through the same sequence and no place in the list
gives the answer away; answers name the choice as shown, with the same `order`."""
from __future__ import annotations

import random
from functools import lru_cache
from typing import Annotated

from fastapi import APIRouter, Query, Request

from .. import deps
from ..classes import embargo
from ..concepts import bank
from ..errors import ApiError
from ..schemas.lessons import ConceptAnswer, ConceptQuiz, ConceptResult
from ..schemas import MAX_SEED

router = APIRouter(tags=["lesson"])


@lru_cache(maxsize=64)
def key_places(order: int) -> dict[str, int]:
    """Where a class set shows each question's key: every place equally often across the bank
    (a quarter of the questions each with four choices), which question gets which place at random."""
    items = bank()
    places = [k % len(q["choices"]) for k, q in enumerate(items)]
    random.Random(f"places/{order}").shuffle(places)
    return {q["id"]: min(p, len(q["choices"]) - 1) for q, p in zip(items, places)}


def arrangement(q: dict, order: int | None) -> list[int]:
    """Bank indices of the choices in the order shown: the bank's own, or shuffled by the class set."""
    if order is None:
        return list(range(len(q["choices"])))
    wrong = [i for i in range(len(q["choices"])) if i != q["answer"]]
    random.Random(f"{order}/{q['id']}").shuffle(wrong)
    wrong.insert(key_places(order)[q["id"]], q["answer"])
    return wrong


def public(q: dict, number: int, order: int | None) -> dict:
    return {"id": q["id"], "number": number, "topic": q["topic"], "question": q["question"],
            "choices": [q["choices"][i]["text"] for i in arrangement(q, order)],
            "applet": q["applet"], "applet_label": q["applet_label"]}


@router.get("/api/concepts", response_model=ConceptQuiz, responses=deps.errors(422))
def concepts(order: Annotated[int | None, Query(ge=0, le=MAX_SEED, description=(
        "A class set: the seed of the question order (the same seed gives every student the same order). "
        "Omitted = the bank's own order."))] = None):
    """The questions (without their answers), in the bank's order or shuffled (questions and each
    question's choices) by a class set."""
    items = list(bank())
    if order is not None:
        random.Random(order).shuffle(items)
    return {"order": order, "questions": [public(q, k + 1, order) for k, q in enumerate(items)]}


@router.post("/api/concepts/{question_id}/answer", response_model=ConceptResult,
             responses=deps.held_by_a_class(deps.errors(400, 404, 413, 422)))
def answer(question_id: str, req: ConceptAnswer, request: Request):
    """Check an answer (`choice` as shown in `order`); every answer comes with the explanation, the
    applet to try and, when it is wrong, why the chosen answer is wrong (409 while a class session
    answers this question and the teacher has not revealed it)."""
    embargo.check(request, "concept", question_id)
    q = next((q for q in bank() if q["id"] == question_id), None)
    if q is None:
        raise ApiError(f"no concept question with id {question_id!r}", "id", status=404)
    if req.choice >= len(q["choices"]):
        raise ApiError(f"choice must be between 0 and {len(q['choices']) - 1}", "choice")
    shown = arrangement(q, req.order)
    picked = shown[req.choice]
    correct = picked == q["answer"]
    return {"id": q["id"], "correct": correct, "answer": shown.index(q["answer"]),
            "why": None if correct else q["choices"][picked]["why"],
            "explanation": q["explanation"], "applet": q["applet"], "applet_label": q["applet_label"]}
