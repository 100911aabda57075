"""Fill the missing spans (issue 41): a student hides short spans of a line, and the family that
writes spans back (its spec lists the "spans" page: T5, span corruption) writes each one, character
by character, with its probability. POST /api/spans."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from pydantic import BaseModel, Field

from .. import deps
from ..contract.families import T5_SENTINELS, for_page
from ..errors import ApiError
from ..schemas import Strict, UnknownChar

router = APIRouter(tags=["lesson"])


class SpansRequest(Strict):
    text: str = Field(min_length=1, max_length=1000, description="The line (it must fit the model's context "
                                                                 "with its sentinels and spans).")
    spans: list[Annotated[list[int], Field(min_length=2, max_length=2)]] = Field(min_length=1, max_length=T5_SENTINELS, description=(
        "The spans to hide, each [start, end) in characters (0-based), in order, not touching or overlapping."))


class Written(BaseModel):
    char: str
    prob: float = Field(description="The model's probability of this character (over every character and sentinel).")


class Span(BaseModel):
    span: int = Field(description="Its sentinel's number: ⟨0⟩, ⟨1⟩, ...")
    start: int
    end: int
    truth: str = Field(description="What was hidden.")
    written: list[Written] = Field(description="What the model wrote back for it, greedily (its likeliest character each time).")


class SpansResponse(BaseModel):
    family: str = Field(description="The family that wrote the spans back.")
    corrupted: str = Field(description="The line as the model read it, each hidden span a sentinel ⟨k⟩.")
    spans: list[Span]
    unknown_chars: list[UnknownChar]


def checked(spans: list[list[int]], n: int) -> list[tuple[int, int]]:
    last = -1
    for k, (start, end) in enumerate(spans):
        if not 0 <= start < end <= n:
            raise ApiError(f"span {k} [{start}, {end}) must be inside the text (0 to {n}) and hold a character", "spans")
        if start <= last:
            raise ApiError(f"span {k} must start after span {k - 1} ends, with a kept character between", "spans")
        last = end
    return [(start, end) for start, end in spans]


@router.post("/api/spans", response_model=SpansResponse, responses=deps.INFERENCE_ERRORS)
def spans(req: SpansRequest, registry: deps.RegistryDep):
    """The hidden spans written back, each character with its probability."""
    family = next((s.name for s in for_page("spans")), None)
    if family is None:
        raise ApiError("no model family writes spans back on this server", "model", status=409)
    model = registry.task(family, req.model)
    spans_ = checked(req.spans, len(req.text))
    ids, unknown = model.vocab.encode(req.text)
    hidden = sum(e - s for s, e in spans_)
    need = len(ids) + 2 * len(spans_) + 2
    if need > model.context:
        raise ApiError(f"the text with its sentinels and spans is {need} tokens; the model reads at most "
                       f"{model.context}", "text")
    written = model.write(ids, spans_, limit=hidden + len(spans_) + 8)
    corrupted = "".join(f"⟨{t - model.vocab.size}⟩" if t >= model.vocab.size else model.vocab.token(t)
                        for t in model.corrupted(ids, spans_)[:-1])
    return deps.respond(SpansResponse, {"family": family, "corrupted": corrupted, "spans": written,
                                        "unknown_chars": unknown})
