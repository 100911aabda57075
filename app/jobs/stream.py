"""A job's event stream: its event file tailed as server-sent events, for any worker, runs and
fine-tunes alike (each kind says how one line is shown and what its `status` event holds).

The history is read in bounded chunks (CHUNK bytes) in a worker thread, never whole and never in
the event loop: 200 students opening a 30-minute run at once each hold one chunk at a time
(benchmarks/run_watchers.py measures it). Ids count lines, so a reconnecting EventSource's
Last-Event-ID resumes after that line (a header that is not a line number is ignored). Each
stream ends when the job has ended and every line is sent, when the client leaves, or at once
when the server shuts down (`install_stop_hook`): a stream left open must not keep a stopping
server, or its trainer, alive.

Written as a plain StreamingResponse (no fastapi.sse task group): a client that leaves is a
normal end, logged by no traceback."""
from __future__ import annotations

import asyncio
import json
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from anyio import to_thread
from fastapi import Request
from fastapi.responses import StreamingResponse

from ..errors import ApiError
from .lifecycle import TERMINAL
from .store import last_event_id

POLL_S = 0.3  # how often a stream looks for new lines
CHUNK = 32 * 1024  # history read per step
KEEPALIVE_S = 15.0  # a comment line after this long without an event (proxies keep the stream open)
RETRY_MS = 5000  # EventSource's reconnect delay

Line = Callable[[bytes, int], "bytes | None"]  # (the raw line, its number) -> one SSE event, or None


def sse(event: str, data: str, event_id: str | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {data}\n\n".encode()


def next_batch(path: Path, pos: int, n: int, skip: int, line: Line) -> tuple[bytes, int, int, bool]:
    """Up to CHUNK bytes of complete lines from `pos`, as SSE (run in a worker thread):
    (events, new pos, lines counted, whether more may be waiting)."""
    try:
        with open(path, "rb") as f:
            f.seek(pos)
            chunk = f.read(CHUNK)
    except FileNotFoundError:
        return b"", pos, n, False
    end = chunk.rfind(b"\n") + 1  # complete lines only
    full = len(chunk) == CHUNK
    if end == 0 and full:  # one line longer than a chunk: not an event, skipped
        return b"", pos + len(chunk), n, True
    out = []
    for raw in chunk[:end].splitlines():
        n += 1
        if n > skip:
            event = line(raw, n)
            if event:
                out.append(event)
    return b"".join(out), pos + end, n, full


async def tail(path: Path, request: Request, line: Line, status: Callable[[], dict], key: Callable[[dict], tuple],
               stopping: threading.Event) -> AsyncIterator[bytes]:
    """`status()` (in a thread): the job as shown, or ApiError once it is gone; a `status` event
    is sent whenever `key(job)` changes."""
    pos, n, last_key, skip = 0, 0, None, last_event_id(request.headers.get("last-event-id", ""))
    quiet_since, ended = time.monotonic(), False
    yield f"retry: {RETRY_MS}\n\n".encode()
    while not stopping.is_set():
        data, pos, n, more = await to_thread.run_sync(next_batch, path, pos, n, skip, line)
        if more:  # more history to send before the job's status
            if data:
                yield data
            continue
        if ended and not data:  # read after the job had ended: every line it wrote is sent
            return
        out = [data] if data else []
        try:
            job = await to_thread.run_sync(status)
        except ApiError:
            yield b"".join(out) + sse("status", json.dumps({"id": path.parent.name, "status": "deleted"}))
            return
        if key(job) != last_key:
            last_key = key(job)
            out.append(sse("status", json.dumps(job, ensure_ascii=False)))
        if out:
            yield b"".join(out)
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > KEEPALIVE_S:
            yield b": keep-alive\n\n"
            quiet_since = time.monotonic()
        if job["status"] in TERMINAL:  # one more read: a last line may have landed after this batch
            ended = True
            continue
        if await request.is_disconnected():
            return
        await asyncio.sleep(POLL_S)


class EventStream(StreamingResponse):
    media_type = "text/event-stream"


def documented(events: dict[str, str], what: str) -> dict:
    """The OpenAPI `responses` entry of a job's stream: each message's fields, `event` one of `events`
    (name -> what its data holds), `data` one JSON object. (The route's response_class stays Response,
    so that FastAPI adds no second, plain-string schema beside it.)"""
    listed = "; ".join(f"`{name}`: {holds}" for name, holds in events.items())
    return {200: {"description": f"Server-sent events, {what}. The first message is `retry: {RETRY_MS}` alone; "
                                 f"a comment line keeps a quiet stream open. Events: {listed}.",
                  "content": {"text/event-stream": {"itemSchema": {
                      "type": "object",
                      "properties": {"id": {"type": "string", "description": "The line's number in the job's file "
                                            "(Last-Event-ID resumes after it); none on `status`."},
                                     "event": {"type": "string", "enum": list(events)},
                                     "data": {"type": "string", "contentMediaType": "application/json"},
                                     "retry": {"type": "integer", "minimum": 0}}}}}}}


def stream(path: Path, request: Request, line: Line, status: Callable[[], dict], key: Callable[[dict], tuple],
           stopping: threading.Event) -> EventStream:
    return EventStream(tail(path, request, line, status, key, stopping),
                       headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def install_stop_hook(*managers) -> None:
    """On SIGINT/SIGTERM, before uvicorn waits for open connections: end the event streams and
    stop this worker's trainers, then let uvicorn's own handler go on. (Only in a server's main
    thread; in tests the lifespan's end calls kill_all.)"""
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(sig)
        if not callable(previous):
            continue

        def handler(signum, frame, previous=previous):
            for m in managers:
                m.stopping.set()
                threading.Thread(target=m.kill_all, name="stop-jobs", daemon=True).start()
            previous(signum, frame)

        try:
            signal.signal(sig, handler)
        except ValueError:  # not the main thread
            return
