"""A run's event stream: progress.jsonl tailed as server-sent events, for any worker.

The history is read in bounded chunks (CHUNK bytes) in a worker thread, never whole and never in
the event loop: 200 students opening a 30-minute run at once each hold one chunk at a time
(benchmarks/run_watchers.py measures it). Lines are sent as the trainer wrote them, with server
paths made relative and the trainer's PID left out. Each stream ends when the run has ended,
when the client leaves, or at once when the server shuts down (`install_stop_hook`): a stream
left open must not keep a stopping server, or its trainer, alive.

Written as a plain StreamingResponse (no fastapi.sse task group): a client that leaves is a
normal end, logged by no traceback."""
from __future__ import annotations

import asyncio
import json
import re
import signal
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

from anyio import to_thread
from fastapi import Request
from fastapi.responses import StreamingResponse

from ..errors import ApiError
from .rules import TERMINAL
from .store import last_event_id, public

POLL_S = 0.3  # how often a stream looks for new lines
CHUNK = 32 * 1024  # history read per step
KEEPALIVE_S = 15.0  # a comment line after this long without an event (proxies keep the stream open)
RETRY_MS = 5000  # EventSource's reconnect delay
PID = re.compile(rb'"pid": ?[0-9]+, ?')


KIND = re.compile(rb'^\{"event": ?"([A-Za-z_]{1,40})"')


def next_batch(path: Path, pos: int, n: int, skip: int, swaps: list[tuple[bytes, bytes]]) -> tuple[bytes, int, int, bool]:
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
        kind = KIND.match(raw)
        if n <= skip or kind is None:
            continue
        for old, new in swaps:
            raw = raw.replace(old, new)
        raw = PID.sub(b"", raw)
        out.append(b"id: %d\nevent: %s\ndata: %s\n\n" % (n, kind.group(1), raw))
    return b"".join(out), pos + end, n, full


def sse(event: str, data: str, event_id: str | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {data}\n\n".encode()


def summary(run: dict) -> dict:
    return {k: run.get(k) for k in ("id", "name", "status", "created", "started", "ended", "reason", "settings",
                                    "corpus", "progress", "validation", "metrics", "snapshots", "steps", "shipped")}


async def tail(m, run_id: str, request: Request, last_id: str) -> AsyncIterator[bytes]:
    run_dir = m.run_dir(run_id)
    path = run_dir / "progress.jsonl"
    swaps = [(str(run_dir).encode(), f"runs/{run_id}".encode()), (str(m.data_dir).encode(), b"data"),
             (str(m.REPO).encode() + b"/", b"")]
    pos, n, last_status, skip = 0, 0, None, last_event_id(last_id)
    quiet_since = time.monotonic()
    yield f"retry: {RETRY_MS}\n\n".encode()
    while not m.stopping.is_set():
        data, pos, n, more = await to_thread.run_sync(next_batch, path, pos, n, skip, swaps)
        if more:  # more history to send before the run's status
            if data:
                yield data
            continue
        out = [data] if data else []
        try:
            run = await to_thread.run_sync(m.get, run_id)
        except ApiError:
            yield b"".join(out) + sse("status", json.dumps({"id": run_id, "status": "deleted"}))
            return
        key = (run["status"], len(run.get("snapshots") or []), run.get("metrics") is not None)
        if key != last_status:
            last_status = key
            out.append(sse("status", json.dumps(public(summary(run), run_dir, m.data_dir, m.REPO))))
        if out:
            yield b"".join(out)
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > KEEPALIVE_S:
            yield b": keep-alive\n\n"
            quiet_since = time.monotonic()
        if run["status"] in TERMINAL and not data:
            return
        if await request.is_disconnected():
            return
        await asyncio.sleep(POLL_S)


class EventStream(StreamingResponse):
    media_type = "text/event-stream"


def stream(m, run_id: str, request: Request) -> EventStream:
    return EventStream(tail(m, run_id, request, request.headers.get("last-event-id", "")),
                       headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})



def install_stop_hook(m) -> None:
    """On SIGINT/SIGTERM, before uvicorn waits for open connections: end the event streams and
    stop this worker's trainers, then let uvicorn's own handler go on. (Only in a server's main
    thread; in tests the lifespan's end calls kill_all.)"""
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(sig)
        if not callable(previous):
            continue

        def handler(signum, frame, previous=previous):
            m.stopping.set()
            threading.Thread(target=m.kill_all, name="stop-runs", daemon=True).start()
            previous(signum, frame)

        try:
            signal.signal(sig, handler)
        except ValueError:  # not the main thread
            return
