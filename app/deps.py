"""Shared dependencies of the routers: the loaded models, page rendering, documented errors."""
from __future__ import annotations

from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel

from .inference import BERT, GPT, BadInput, Models
from .schemas import ErrorBody


# async: trivial dependencies would otherwise cost a thread-pool hop per request.
async def models(request: Request) -> Models:
    return request.app.state.models


async def gpt(request: Request) -> GPT:
    m = request.app.state.models.gpt
    if m is None:
        raise BadInput("the GPT model is not loaded on this server (see /api/health)", None, status=503)
    return m


async def bert(request: Request) -> BERT:
    m = request.app.state.models.bert
    if m is None:
        raise BadInput("the BERT model is not loaded on this server (see /api/health)", None, status=503)
    return m


def check_top_k(top_k: int, vocab_size: int, allow_zero: bool) -> None:
    low = 0 if allow_zero else 1
    if not low <= top_k <= vocab_size:
        raise BadInput(f"top_k must be between {low} and the vocabulary size ({vocab_size})", "top_k")


def respond(model: type[BaseModel], data: dict) -> Response:
    """Validate against the documented model and serialise in the endpoint's own thread. (For a
    plain `def` endpoint FastAPI would validate the returned dict in a second thread-pool hop.)"""
    return Response(model.model_validate(data).model_dump_json(), media_type="application/json")


def render(request: Request, template: str, page: str, title: str) -> HTMLResponse:
    templates = request.app.state.templates
    return templates.TemplateResponse(request, template, {"request": request, "page": page, "title": title})


def errors(*statuses: int) -> dict:
    """OpenAPI `responses=` entries for the error statuses a route can answer."""
    text = {400: "Malformed JSON body", 404: "Not found", 413: "Request body too large",
            422: "Invalid parameter (the body names it)",
            503: "Model not loaded, or the server is busy (then with Retry-After; try again shortly)"}
    return {s: {"model": ErrorBody, "description": text[s]} for s in statuses}
