"""GPT: the next-character distribution under the sampling knobs, and text generation
(whole, or streamed as server-sent events)."""
from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.sse import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool

from .. import deps
from ..contract import FIRST_CHAR, Vocab
from ..errors import ApiError
from ..sampling import draw, sampling_distribution, uniform
from ..schemas import MAX_PROMPT_CHARS, GenerateQuery, GenerateRequest, GenerateResponse, NextTokenRequest, NextTokenResponse
from ..tasks.gpt import GPT, Step

router = APIRouter(tags=["generation"])
log = logging.getLogger("app")

STREAM_DOC = """Server-sent events: `event: token` with data {"text": "<1+ new characters>", "steps": [...]}
(several characters per event, about every 10 ms), then `event: done` with data {"text": "<all new
characters>", "context_used": int, "unknown_chars": [...]}. Generation stops when the client
disconnects. Should generation fail midway, an `event: error` with data {"detail": ...} ends the stream.
Lines starting with `:` are keep-alive comments. Same parameters and rules as /api/generate: the same
seed gives the same text. POST takes the parameters as a JSON body: use it for long prompts (a URL has
a length limit)."""


def encode_prompt(model: GPT, req) -> tuple[list[int], list[dict]]:
    deps.check_top_k(req.top_k, model.vocab.size, allow_zero=True)
    return model.vocab.encode(req.prompt)


def step_json(vocab: Vocab, step: Step) -> dict:
    final = step.dist.final
    return {"char": vocab.token(step.token), "prob": float(final[step.token - FIRST_CHAR]),
            "top": [{"char": vocab.chars[i], "prob": float(final[i])} for i in step.dist.top(5)]}


def start(model: GPT, req: GenerateRequest, ids: list[int]) -> Iterator[Step]:
    return model.generate(ids, req.max_new_tokens, req.temperature, req.top_k, req.top_p, req.seed)


@router.post("/api/next-token", response_model=NextTokenResponse, responses=deps.INFERENCE_ERRORS)
def next_token(req: NextTokenRequest, registry: deps.RegistryDep):
    """The GPT's distribution over the next character, before and after each sampling knob.

    temperature 0 = greedy (argmax); otherwise logits / temperature. top_k 0 = off; top_p 1.0 = off;
    top-k applies before top-p; top-p keeps the smallest set of most likely characters whose mass
    reaches p. Special tokens are never candidates. With `seed` (and `generated`, the number of
    trailing prompt characters that were sampled), `sample` is the character /api/generate draws
    at that point with that seed: stepping one character at a time gives the same text (up to float
    rounding between this full forward and generation's cached one: ~1e-5 in the logits)."""
    model = registry.gpt(req.model)
    ids, unknown = encode_prompt(model, req)
    if req.generated >= len(ids):
        raise ApiError(f"generated is {req.generated}, but the prompt has only {len(ids)} characters "
                       "(the original prompt must be at least one of them)", "generated")
    if len(ids) - req.generated > MAX_PROMPT_CHARS:
        raise ApiError(f"prompt must be at most {MAX_PROMPT_CHARS} characters before the generated ones", "prompt")
    logits, used = model.next_logits(ids, req.generated)
    dist = sampling_distribution(logits[FIRST_CHAR:], req.temperature, req.top_k, req.top_p)
    sample = None
    if req.seed is not None:
        u = uniform(req.seed, req.generated)
        index = draw(dist, u)
        sample = {"char": model.vocab.chars[index], "index": index, "prob": float(dist.final[index]), "u": u}
    return deps.respond(NextTokenResponse, {
        "chars": model.vocab.chars, "raw": dist.raw.tolist(), "tempered": dist.tempered.tolist(),
        "final": dist.final.tolist(), "kept": dist.kept.tolist(), "entropy": dist.entropies,
        "greedy": dist.greedy, "context_used": used, "unknown_chars": unknown, "sample": sample})


@router.post("/api/generate", response_model=GenerateResponse, responses=deps.INFERENCE_ERRORS)
def generate(req: GenerateRequest, registry: deps.RegistryDep):
    """Sample max_new_tokens characters after the prompt (KV-cached: one forward per character)."""
    model = registry.gpt(req.model)
    ids, unknown = encode_prompt(model, req)
    steps = [step_json(model.vocab, s) for s in start(model, req, ids)]
    return deps.respond(GenerateResponse, {"text": "".join(s["char"] for s in steps), "steps": steps,
                                           "context_used": min(len(ids), model.context), "unknown_chars": unknown})


def take_batch(steps: Iterator[Step], vocab: Vocab, seconds: float, max_chars: int):
    """Run the sampler for up to `seconds` or `max_chars` characters: (steps, finished, error).
    An error is returned, not raised, so the characters made before it still go out."""
    out: list[dict] = []
    deadline = time.perf_counter() + seconds
    try:
        for step in steps:
            out.append(step_json(vocab, step))
            if len(out) >= max_chars or time.perf_counter() >= deadline:
                return out, False, None
    except Exception as e:  # noqa: BLE001 - reported by event_stream
        return out, True, e
    return out, True, None


def sse(event: str, data: dict) -> ServerSentEvent:
    # raw_data: our own compact JSON (FastAPI's jsonable_encoder would walk every float of every step)
    return ServerSentEvent(event=event, raw_data=json.dumps(data, separators=(",", ":")))


async def event_stream(request: Request, vocab: Vocab, steps: Iterator[Step], used: int,
                       unknown: list[dict]) -> AsyncIterator[ServerSentEvent]:
    """Batches of characters as SSE events (fastapi.sse formats them; a comment line keeps an idle
    stream open). The sampler runs in the thread pool one batch at a time, so after a disconnect at
    most one batch (~10 ms) of work is spent: Starlette cancels the response when the client leaves,
    and the check between batches catches what the cancellation does not."""
    settings, state = request.app.state.settings, request.app.state
    state.active_streams += 1
    parts: list[str] = []
    try:
        while True:
            batch, finished, error = await run_in_threadpool(
                take_batch, steps, vocab, settings.stream_flush_ms / 1000, settings.stream_flush_chars)
            if batch:
                text = "".join(s["char"] for s in batch)
                parts.append(text)
                yield sse("token", {"text": text, "steps": batch})
            if error is not None:
                # the 200 is already sent: end the stream with an event, not a dropped socket
                log.error("generation stream failed", exc_info=error)
                yield sse("error", {"detail": "generation failed on the server", "parameter": None})
                return
            if finished:
                break
            if await request.is_disconnected():
                return
        yield sse("done", {"text": "".join(parts), "context_used": used, "unknown_chars": unknown})
    finally:
        steps.close()
        state.active_streams -= 1


def open_stream(request: Request, req: GenerateRequest, model: GPT) -> AsyncIterator[ServerSentEvent]:
    """Everything that can be refused (unknown model, bad top_k) is refused here, while a 4xx can
    still be sent: the event stream itself starts with a 200."""
    ids, unknown = encode_prompt(model, req)
    return event_stream(request, model.vocab, start(model, req, ids), min(len(ids), model.context), unknown)


# The streams are made in dependencies that close them when the request ends (scope="request":
# after the response). fastapi.sse cancels its producer when the client leaves but leaves the
# generator to the garbage collector; closing it here frees the sampler and its KV cache at once.
async def stream_from_query(request: Request, params: Annotated[GenerateQuery, Query()],
                            registry: deps.RegistryDep) -> AsyncIterator[AsyncIterator[ServerSentEvent]]:
    # A set used for the first time loads here (ONNX sessions, checks): in the pool, not on the loop.
    stream = open_stream(request, params, await run_in_threadpool(registry.gpt, params.model))
    try:
        yield stream
    finally:
        await stream.aclose()


async def stream_from_body(request: Request, req: GenerateRequest,
                           registry: deps.RegistryDep) -> AsyncIterator[AsyncIterator[ServerSentEvent]]:
    stream = open_stream(request, req, await run_in_threadpool(registry.gpt, req.model))
    try:
        yield stream
    finally:
        await stream.aclose()


SSE_RESPONSE = {200: {"content": {"text/event-stream": {}}, "description": "Server-sent events"}}


def json_errors(*statuses: int) -> dict:
    """deps.errors, with the JSON content type spelled out: FastAPI would document a `model` of an
    EventSourceResponse route under text/event-stream, but the errors come before the stream, as JSON."""
    ref = {"schema": {"$ref": "#/components/schemas/ErrorBody"}}
    return {s: {"description": e["description"], "content": {"application/json": ref}}
            for s, e in deps.errors(*statuses).items()}



@router.get("/api/generate/stream", response_class=EventSourceResponse, description=STREAM_DOC,
            responses={**SSE_RESPONSE, **json_errors(404, 409, 422, 503)})
async def generate_stream_get(
        stream: Annotated[AsyncIterator[ServerSentEvent], Depends(stream_from_query, scope="request")]
) -> AsyncIterator[ServerSentEvent]:
    async for event in stream:
        yield event


@router.post("/api/generate/stream", response_class=EventSourceResponse, description=STREAM_DOC,
             responses={**SSE_RESPONSE, **json_errors(400, 404, 409, 413, 422, 503)})
async def generate_stream_post(
        stream: Annotated[AsyncIterator[ServerSentEvent], Depends(stream_from_body, scope="request")]
) -> AsyncIterator[ServerSentEvent]:
    async for event in stream:
        yield event
