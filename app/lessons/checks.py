"""A lesson file read and checked: its shape (app/lessons/schema.py), then what it refers to in the
shipped data (the NSP quiz bank of the model set, the concept-check bank). Every refusal is one
ApiError naming the field by its whole path (`stages[2].items[0].positions`), so a teacher with a
file of 40 stages knows which one to mend."""
from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ..concepts import bank as concept_bank
from ..errors import ApiError
from ..inputs import quiz_bank
from ..registry import Registry
from .schema import Lesson

_SENTENCES = {
    "missing": "is required",
    "extra_forbidden": "is not a field of a lesson file here",
    "string_too_short": "must not be empty",
    "string_too_long": "must be at most {max_length} characters",
    "too_short": "must hold at least {min_length} items",
    "too_long": "may hold at most {max_length} items",
    "greater_than_equal": "must be at least {ge}",
    "less_than_equal": "must be at most {le}",
    "int_type": "must be an integer",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "literal_error": "must be one of {expected}",
    "string_pattern_mismatch": "must match {pattern}",
    "union_tag_invalid": "must be one of {expected_tags}",
    "union_tag_not_found": "is required (one of applet, nsp, fill, concept, label)",
    "string_unicode": "must be valid Unicode text",
}
KINDS = ("applet", "nsp", "fill", "concept", "label")
# The fields a whole-object check may name first (app/lessons/schema.py's validators say their field first)
FIELDS = ("positions", "seed", "labels", "lines", "state", "version", "stages", "count", "items")


def path_of(loc: tuple) -> str:
    """pydantic's location as a person writes it: ("stages", 2, "fill", "items", 0) -> stages[2].items[0]
    (the union's tag, here "fill", is pydantic's step, not the file's)."""
    out = ""
    steps = list(loc)
    for k, step in enumerate(steps):
        if isinstance(step, int):
            out += f"[{step}]"
        elif step in KINDS and k > 0 and isinstance(steps[k - 1], int):
            continue
        elif isinstance(step, str) and step.startswith("function-"):
            continue
        else:
            out += ("." if out else "") + str(step)[:64]
    return out


def refusal(err: dict) -> ApiError:
    """One pydantic error as an ApiError naming the field's path. A check of a whole object says its
    field first ("positions must ..."): that field is named."""
    where = path_of(tuple(err.get("loc", ())))
    kind = err.get("type", "")
    if kind.startswith("union_tag"):  # the stage's kind is what is wrong (or missing)
        where += ".kind"
    if kind == "value_error":
        said = str(err.get("msg", "")).removeprefix("Value error, ")
        first, _, rest = said.partition(" ")
        if first in FIELDS:  # "positions must lie within ..." -> "stages[1].items[0].positions must lie within ..."
            where = f"{where}.{first}" if where else first
            return ApiError(f"{where} {rest}", where)
        return ApiError(f"{where}: {said}" if where else said, where or None)
    template = _SENTENCES.get(kind)
    ctx = err.get("ctx") or {}
    try:
        said = template.format(**ctx) if template else str(err.get("msg", "is not valid"))
    except (KeyError, IndexError):
        said = str(err.get("msg", "is not valid"))
    return ApiError(f"{where or 'the lesson'} {said}", where or None)


def parse(data: Any) -> Lesson:
    """The lesson in `data` (a decoded JSON value), its shape checked; 422 naming the first wrong field."""
    if not isinstance(data, dict):
        raise ApiError("a lesson must be a JSON object (a lesson file as /api/lessons/{id} gives it)", None)
    try:
        return Lesson.model_validate(data)
    except ValidationError as e:
        raise refusal(e.errors()[0]) from None


def check_refs(lesson: Lesson, registry: Registry, model: str | None = None) -> None:
    """What the stages pick from the shipped banks is there: NSP pairs of the model set's quiz bank
    (`model`, the default set when None), concept questions of the concept check."""
    nsp_ids = None
    known_concepts = {q["id"] for q in concept_bank()}
    for k, stage in enumerate(lesson.stages):
        if stage.kind == "nsp" and stage.items is not None:
            if nsp_ids is None:
                nsp_ids = {it["id"] for it in quiz_bank(registry.get(model))}
            for j, item in enumerate(stage.items):
                if item not in nsp_ids:
                    raise ApiError(f"stages[{k}].items[{j}] is {item[:40]!r}, which is not a pair of the NSP quiz bank",
                                   f"stages[{k}].items[{j}]")
        elif stage.kind == "nsp":
            size = len(quiz_bank(registry.get(model)))
            if stage.count > size:
                raise ApiError(f"stages[{k}].count must be at most {size} (the NSP quiz bank's size)", f"stages[{k}].count")
        elif stage.kind == "concept":
            for j, qid in enumerate(stage.questions):
                if qid not in known_concepts:
                    raise ApiError(f"stages[{k}].questions[{j}] is {qid[:40]!r}, which is not a question of the "
                                   "concept check", f"stages[{k}].questions[{j}]")


def read(data: Any, registry: Registry) -> Lesson:
    lesson = parse(data)
    check_refs(lesson, registry)
    return lesson
