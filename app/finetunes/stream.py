"""A fine-tune's event stream, on the jobs kernel's one SSE tail (app/jobs/stream.py): each line of
events.jsonl sent as its event (`start`, `result`, `classifier`, `gpt_way`, `summary`, `error`),
and `status` (the job as GET /api/finetunes/{id} shows it: no server paths, no PID) whenever its
status, results, summary or classifiers change."""
from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

from fastapi import Request

from ..jobs.stream import EventStream, sse, stream as job_stream


# What the stream sends (the trainer's lines, training/finetune/command.py, and the server's `status`), for its
# documentation.
EVENTS = {
    "start": "the grid: task, kind, metric, labels, arms, sizes, seeds, n_train, n_test, jobs, majority, estimate",
    "result": "one finished fine-tune: arm, size, seed, score (accuracy or f1), n_test, seconds, time_left",
    "classifier": "an exported classifier: arm, dir, accuracy, score",
    "gpt_way": "GPT's zero-training answer, each label scored as a continuation",
    "summary": "the trainer's summary per arm and size, its differences and its time",
    "error": "the fine-tune failed (message; errors: a malformed task file's list)",
    "status": "the job as GET /api/finetunes/{id} answers it, whenever it changes",
}


def line(raw: bytes, n: int) -> bytes | None:
    """One line as an SSE event; a line that is not a JSON object is skipped."""
    if not raw.strip():
        return None
    try:
        event = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(event, dict):
        return None
    kind = "".join(ch for ch in str(event.get("event", "message")) if ch.isalnum() or ch == "_")[:40]
    return sse(kind or "message", json.dumps(event, ensure_ascii=False), str(n))


def key(job: dict) -> tuple:
    return job["status"], job.get("done"), job.get("summary") is not None, len(job.get("classifiers") or [])


def stream(path: Path, request: Request, status: Callable[[], dict], stopping: threading.Event) -> EventStream:
    return job_stream(path, request, line, status, key, stopping)
