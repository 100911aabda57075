"""A fine-tune's event stream: its events.jsonl tailed as server-sent events, the way a run's
progress is (app/runs/events.py: the same framing, keep-alives, retry delay and Last-Event-ID
rule), for any worker.

A plain StreamingResponse, not fastapi.sse's task group: a client that leaves early is a normal
end, logged by no traceback. The history is read in bounded chunks in a worker thread. Each
`status` event is the job as GET /api/finetunes/{id} shows it (no server paths, no PID). The
stream ends when the job has ended and every line is sent, when the client leaves, or when the
server stops."""
from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from anyio import to_thread
from fastapi import Request

from ..errors import ApiError
from ..runs.events import CHUNK, KEEPALIVE_S, POLL_S, RETRY_MS, EventStream, sse
from ..runs.store import last_event_id

TERMINAL = ("finished", "cancelled", "failed", "interrupted")


def next_lines(path: Path, pos: int, n: int, skip: int) -> tuple[bytes, int, int, bool]:
    """Up to CHUNK bytes of complete lines from `pos` as SSE (run in a worker thread): (events, new
    pos, lines counted, whether more may be waiting). Lines that are not JSON objects are skipped."""
    try:
        with open(path, "rb") as f:
            f.seek(pos)
            chunk = f.read(CHUNK)
    except FileNotFoundError:
        return b"", pos, n, False
    end = chunk.rfind(b"\n") + 1
    full = len(chunk) == CHUNK
    if end == 0 and full:  # one line longer than a chunk: not an event, skipped
        return b"", pos + len(chunk), n, True
    out = []
    for raw in chunk[:end].splitlines():
        n += 1
        if n <= skip or not raw.strip():
            continue
        try:
            event = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(event, dict):
            kind = "".join(ch for ch in str(event.get("event", "message")) if ch.isalnum() or ch == "_")[:40]
            out.append(sse(kind or "message", json.dumps(event, ensure_ascii=False), str(n)))
    return b"".join(out), pos + end, n, full


async def tail(path: Path, request: Request, last_id: str, status: Callable[[], dict],
               stopping) -> AsyncIterator[bytes]:
    """`status()` (in a thread): the job as shown, or ApiError once it is gone."""
    pos, n, last_key, skip = 0, 0, None, last_event_id(last_id)
    quiet_since = time.monotonic()
    yield f"retry: {RETRY_MS}\n\n".encode()
    while not stopping.is_set():
        data, pos, n, more = await to_thread.run_sync(next_lines, path, pos, n, skip)
        if more:
            if data:
                yield data
            continue
        out = [data] if data else []
        try:
            job = await to_thread.run_sync(status)
        except ApiError:
            yield b"".join(out) + sse("status", json.dumps({"id": path.parent.name, "status": "deleted"}))
            return
        key = (job["status"], job.get("done"), job.get("summary") is not None, len(job.get("classifiers") or []))
        if key != last_key:
            last_key = key
            out.append(sse("status", json.dumps(job, ensure_ascii=False)))
        if out:
            yield b"".join(out)
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > KEEPALIVE_S:
            yield b": keep-alive\n\n"
            quiet_since = time.monotonic()
        if job["status"] in TERMINAL and not data:
            return
        if await request.is_disconnected():
            return
        await asyncio.sleep(POLL_S)


def stream(path: Path, request: Request, status: Callable[[], dict], stopping) -> EventStream:
    return EventStream(tail(path, request, request.headers.get("last-event-id", ""), status, stopping),
                       headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
