"""The OpenAPI schema with the limits of the models actually loaded.

The request models (app/schemas/) carry the static limits. The ones that depend on the loaded
models (vocabulary size, BERT context, size of the quiz bank, attention layers and heads) are checked by the routers; here
they are written into the served schema as well, so that clients, and the schema fuzzer in
tests/app/test_fuzz_schema.py, see the same bounds the server enforces. The limits are the default
set's. The schema is built on
first request after the models are loaded (before that it is served without these bounds and
not cached).
"""
from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from .contract import bert_pair_room, bert_text_room
from .registry import ModelSet
from .concepts import bank as concept_bank
from .schemas import MAX_MASKS, MAX_TEXT_CHARS

MASK_MARKER_EXTRA = len("[MASK]") - 1  # a marker is 6 characters of text but one token


def body_limits(models: ModelSet) -> dict[str, dict[str, dict[str, int]]]:
    """{component schema: {property: {JSON-schema keyword: value}}}."""
    limits: dict[str, dict[str, dict[str, int]]] = {}
    if models.vocab is not None:
        top_k = {"maximum": models.vocab.size}
        for name in ("NextTokenRequest", "GenerateRequest", "MaskFillRequest"):
            limits.setdefault(name, {})["top_k"] = top_k
    if models.bert is not None:
        room = bert_text_room(models.bert.context)
        limits.setdefault("MaskFillRequest", {})["text"] = {
            "maxLength": min(MAX_TEXT_CHARS, room + MASK_MARKER_EXTRA * MAX_MASKS)}
        limits["MaskFillRequest"]["positions"] = {"minItems": 1}
        limits["CorruptRequest"] = {"text": {"maxLength": min(MAX_TEXT_CHARS, room)}}
        pair = bert_pair_room(models.bert.context) - 1  # the other sentence has >= 1 character
        limits["NSPRequest"] = {"a": {"maxLength": pair}, "b": {"maxLength": pair}}
    view = attention_limits(models)
    if view:
        limits["AttentionRequest"] = view
    return limits


def attention_limits(models: ModelSet) -> dict[str, dict[str, int]]:
    """POST /api/attention: `layer` and `head` below both models' n_layer / n_head (-1 = the mean)."""
    out: dict[str, dict[str, int]] = {}
    tasks = [t for t in (models.gpt, models.bert) if t is not None]
    for name in ("layer", "head"):
        sizes = []
        for task in tasks:
            try:
                sizes.append(int(task.config[f"n_{name}"]))
            except (AttributeError, KeyError, TypeError, ValueError):
                pass
        if sizes and min(sizes) >= 1:
            out[name] = {"maximum": min(sizes) - 1}
    return out


def _patch_property(schema: dict[str, Any], keywords: dict[str, int]) -> None:
    # Optional fields are anyOf [{type...}, {type: null}]: constrain the non-null branch.
    targets = [s for s in schema.get("anyOf", []) if s.get("type") not in (None, "null")] or [schema]
    for target in targets:
        target.update(keywords)


def patch_schema(spec: dict[str, Any], models: ModelSet) -> dict[str, Any]:
    components = spec.get("components", {}).get("schemas", {})
    limits = body_limits(models)
    for name, props in limits.items():
        schema_props = components.get(name, {}).get("properties", {})
        for prop, keywords in props.items():
            if prop in schema_props:
                _patch_property(schema_props[prop], keywords)
    # Query parameters are inlined per operation.
    query_limits = dict(limits.get("GenerateRequest", {}))
    stream = spec.get("paths", {}).get("/api/generate/stream", {}).get("get", {})
    for param in stream.get("parameters", []):
        if param["name"] in query_limits:
            _patch_property(param["schema"], query_limits[param["name"]])
    concepts = components.get("CreateSession", {}).get("properties", {}).get("concepts")
    if concepts is not None:  # the ids of the concept check's questions (app/concepts.json)
        ids = [q["id"] for q in concept_bank()]
        for branch in concepts.get("anyOf", [concepts]):
            if branch.get("type") == "array":
                branch["items"] = {**branch.get("items", {}), "enum": ids}
    quiz = spec.get("paths", {}).get("/api/nsp/quiz", {}).get("get", {})
    for param in quiz.get("parameters", []):
        if param["name"] == "index" and models.quiz:
            _patch_property(param["schema"], {"minimum": 0, "maximum": len(models.quiz) - 1})
    return spec


def install(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        spec = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        registry = app.state.registry
        if registry is None:
            return spec  # lifespan not run (yet): do not cache a schema without the model limits
        app.openapi_schema = patch_schema(spec, registry.default)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
