"""What a run's events mean: each line of progress.jsonl folded into run.json as the watcher reads
it (app/jobs/watch.py), and the run's event stream (app/jobs/stream.py): lines sent as the trainer
wrote them, with server paths made relative and the trainer's PID left out, plus `status` (the
run summary) whenever its status, snapshots or metrics change."""
from __future__ import annotations

import json
import re

from fastapi import Request

from ..contract import FAMILIES
from ..jobs.store import public
from ..jobs.stream import EventStream, stream as job_stream

PID = re.compile(rb'"pid": ?[0-9]+, ?')
KIND = re.compile(rb'^\{"event": ?"([A-Za-z_]{1,40})"')
SUMMARY = ("id", "name", "status", "created", "started", "ended", "reason", "settings", "corpus", "progress",
           "validation", "metrics", "snapshots", "steps", "shipped")


# What the stream sends (the trainer's lines, training/live/, and the server's `status`), for its documentation.
EVENTS = {
    "start": "the trainer began (families, minutes, preset, seed, threads, device, corpus)",
    "models": "each family's model and schedule (parameters, config, train), the corpus, the device",
    "progress": "one family's step, loss, tokens_per_s, elapsed_s, remaining_s, fraction, lr",
    "eval": "one family's validation loss at a step",
    "sample": "what each family writes or fills now, at a step",
    "snapshot": "a model set written (name, step, final), playable from now on",
    "snapshot_failed": "a snapshot that could not be written (message)",
    "exporting": "the final models are being written",
    "finished": "the run ended: test metrics, validation_loss, steps, train_seconds",
    "cancelled": "the run was stopped (reason)",
    "error": "the run failed (message; parameter when an input was at fault)",
    "status": "the run summary (as GET /api/runs/{id} lists it) whenever its status, snapshots or metrics change",
}


def summary(run: dict) -> dict:
    return {k: run.get(k) for k in SUMMARY}


def on_event(m, run_id: str, e: dict) -> None:
    """Fold one trainer line into run.json."""
    kind = e.get("event")
    if kind == "models":
        m._update(run_id, models=e.get("models"), commands=e.get("commands"),
                  corpus={**m.get(run_id)["corpus"], **(e.get("corpus") or {})})
    elif kind == "progress":
        run = m.get(run_id)
        m._update(run_id, progress={**run["progress"], e["family"]: {
            k: e.get(k) for k in ("step", "loss", "tokens_per_s", "elapsed_s", "remaining_s", "fraction")}})
    elif kind == "eval":
        run = m.get(run_id)
        m._update(run_id, validation={**run["validation"], e["family"]: {"step": e["step"], "loss": e.get("val_loss")}})
    elif kind == "sample":
        m._update(run_id, sample={k: e.get(k) for k in ("step", *FAMILIES)})
    elif kind == "snapshot":
        run = m.get(run_id)
        entry = {"name": e["name"], "step": e["step"], "steps": e.get("steps"), "final": e.get("final", False),
                 "id": run_id if e.get("final") else f"{run_id}@{e['step']}"}
        m._update(run_id, snapshots=[*run["snapshots"], entry], **({"steps": e.get("steps")} if e.get("final") else {}))
    elif kind == "finished":
        m._update(run_id, metrics=e.get("metrics"), validation_loss=e.get("validation_loss"),
                  steps=e.get("steps"), commands=e.get("commands"), playable_after_s=e.get("playable_after_s"))


def stream(m, run_id: str, request: Request) -> EventStream:
    """The run's history, then live, as server-sent events (ends once the run has ended)."""
    run_dir = m.run_dir(run_id)
    swaps = [(str(run_dir).encode(), f"runs/{run_id}".encode()), (str(m.data_dir).encode(), b"data"),
             (str(m.REPO).encode() + b"/", b"")]

    def line(raw: bytes, n: int) -> bytes | None:
        kind = KIND.match(raw)
        if kind is None:
            return None
        for old, new in swaps:
            raw = raw.replace(old, new)
        return b"id: %d\nevent: %s\ndata: %s\n\n" % (n, kind.group(1), PID.sub(b"", raw))

    def status() -> dict:
        return public(summary(m.get(run_id)), run_dir, m.data_dir, m.REPO)

    def key(run: dict) -> tuple:
        return run["status"], len(run.get("snapshots") or []), run.get("metrics") is not None

    return job_stream(run_dir / m.EVENTS, request, line, status, key, m.stopping)
