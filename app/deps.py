"""Shared dependencies of the routers, as `Annotated` aliases: the registry, the settings, the two
kinds of job (runs, fine-tunes), page rendering and documented errors. A router takes what it needs
as a parameter (`registry: deps.RegistryDep`), never from `request.app.state`. Routers resolve a
request's `model` with `registry.gpt(req.model)`."""
from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, Response
from pydantic import BaseModel

from . import auth
from .config import Settings
from .errors import ApiError
from .finetunes.jobs import FinetuneManager
from .registry import Registry
from .runs import RunManager
from .schemas import ErrorBody


# async: trivial dependencies would otherwise cost a thread-pool hop per request.
async def get_registry(request: Request) -> Registry:
    return request.app.state.registry


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_runs(request: Request) -> RunManager:
    return request.app.state.runs


async def get_finetunes(request: Request) -> FinetuneManager:
    return request.app.state.finetunes


RegistryDep = Annotated[Registry, Depends(get_registry)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
RunsDep = Annotated[RunManager, Depends(get_runs)]
FinetunesDep = Annotated[FinetuneManager, Depends(get_finetunes)]


def check_top_k(top_k: int, vocab_size: int, allow_zero: bool) -> None:
    low = 0 if allow_zero else 1
    if not low <= top_k <= vocab_size:
        raise ApiError(f"top_k must be between {low} and the vocabulary size ({vocab_size})", "top_k")


def respond(model: type[BaseModel], data: dict) -> Response:
    """Validate against the documented model and serialise in the endpoint's own thread. (For a
    plain `def` endpoint FastAPI would validate the returned dict in a second thread-pool hop.)"""
    return Response(model.model_validate(data).model_dump_json(), media_type="application/json")


def render(request: Request, template: str, page: str, title: str) -> HTMLResponse:
    templates = request.app.state.templates
    # a logged-in instructor's navigation also lists the class and the lessons (no guess is counted)
    return templates.TemplateResponse(request, template, {"request": request, "page": page, "title": title,
                                                          "instructor": auth.is_instructor(request)})


def errors(*statuses: int) -> dict:
    """OpenAPI `responses=` entries for the error statuses a route can answer."""
    text = {400: "Malformed JSON body", 401: "Instructor token missing", 403: "Instructor token wrong",
            404: "Not found (an unknown `model` names the parameter)", 409: "Conflict (e.g. the model set has no such model)",
            413: "Request body too large", 422: "Invalid parameter (the body names it)",
            429: "Too many wrong instructor tokens lately (then with Retry-After)",
            503: "Model not loaded, or the server is busy (then with Retry-After; try again shortly)",
            507: "Storage full (the cap on stored training runs is reached, or the disk is full)"}
    return {s: {"model": ErrorBody, "description": text[s]} for s in statuses}


INFERENCE_ERRORS = errors(400, 404, 409, 413, 422, 503)
HELD = ("a class session is answering this item and its teacher has not revealed it yet: the truth is held back "
        "(naming `id`)")


def held_by_a_class(responses: dict) -> dict:
    """`responses` of a self-study answer route (NSP quiz, concept check) with the 409 it gives while a
    class answers the same item; a 409 already listed keeps its own meaning beside it."""
    other = responses.get(409, {}).get("description")
    return {**responses, 409: {"model": ErrorBody, "description": f"{other}; or {HELD}" if other else HELD.capitalize()}}


class CsvFile(PlainTextResponse):
    """A CSV download (documented as text/csv: the route sends `text/csv; charset=utf-8`)."""
    media_type = "text/csv"


class JsonLinesFile(PlainTextResponse):
    """A JSON Lines download, one JSON object a line (documented as application/x-ndjson, as sent)."""
    media_type = "application/x-ndjson"
