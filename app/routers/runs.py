"""Live pretraining: the /train page and the runs API (thin: the work is in app/runs/).

Watching is open to everyone (the class sees the same run, late joiners included); starting,
cancelling and deleting need the instructor (app/auth.py; login in app/routers/login.py).
Clients see relative names only: no server paths, no process ids (app/jobs/store.py `public`)."""
from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from .. import auth, deps
from ..jobs import ACTIVE, TRAIN_MISSING, public, training_available
from ..jobs.stream import documented
from ..runs import RunManager
from ..runs.events import EVENTS, stream, summary
from ..runs.rules import MAX_MINUTES, MIN_CORPUS_CHARS, MIN_MINUTES, clean_name
from ..errors import ApiError
from ..schemas.runs import RunList, RunSummary, StartRun

router = APIRouter(tags=["runs"])


def existing_run(run_id: str, m: deps.RunsDep) -> dict:
    """404 before a stream starts."""
    return m.get(run_id)


def shown(m: RunManager, run: dict) -> dict:
    return public(summary(run), m.run_dir(run["id"]), m.data_dir, m.REPO)


@router.get("/api/runs", response_model=RunList)
def list_runs(request: Request, m: deps.RunsDep, s: deps.SettingsDep):
    """Every stored run, newest first, with its status (queued, running, finished, cancelled, failed,
    interrupted), settings, corpus description and metrics; the running one; what starting needs."""
    runs = m.list()
    return {"runs": [shown(m, r) for r in runs], "active": next((r["id"] for r in runs if r["status"] in ACTIVE), None),
            "training_available": training_available(), "enable": None if training_available() else TRAIN_MISSING,
            "storage_problem": m.storage_problem(), "presets": m.presets(), "instructor": auth.is_instructor(request),
            "limits": {"min_corpus_chars": MIN_CORPUS_CHARS, "max_corpus_bytes": s.max_corpus_bytes,
                       "min_minutes": MIN_MINUTES, "max_minutes": MAX_MINUTES, "max_runs": s.max_runs}}


@router.get("/api/runs/{run_id}", response_model=RunSummary, responses=deps.errors(404))
def get_run(run_id: str, m: deps.RunsDep):
    """One run in full: status, settings, corpus, latest progress, held-out metrics, snapshots (each a
    model set id usable as `model` everywhere), the equivalent command lines (relative paths)."""
    run = m.get(run_id)
    return public(run, m.run_dir(run_id), m.data_dir, m.REPO)


@router.post("/api/runs", status_code=202, response_model=RunSummary,
             responses=deps.errors(400, 401, 403, 409, 413, 422, 429, 503, 507))
def start_run(body: StartRun, m: deps.RunsDep, _: auth.InstructorDep):
    """Start a run (instructor only). 202 with the run; 409 naming the run already training;
    507 when the stored-runs cap is reached or the disk is full (nothing is left behind);
    503 when training is not installed or the data folder is not writable."""
    if body.minutes is not None and not MIN_MINUTES <= body.minutes <= MAX_MINUTES:
        raise ApiError(f"minutes must be between {MIN_MINUTES:g} and {MAX_MINUTES:g}", "minutes")
    name = clean_name(body.name)
    if not training_available():
        raise ApiError(TRAIN_MISSING, None, status=503)
    presets = {p["name"]: p for p in m.presets()}
    if body.preset is not None and body.preset not in presets:
        raise ApiError(f"preset must be one of {', '.join(presets)}", "preset")
    minutes = body.minutes if body.minutes is not None else float(presets[body.preset]["minutes"]) if body.preset else 3.0
    run = m.start(body.corpus, name, list(dict.fromkeys(body.families)), minutes, body.preset, body.seed)
    return Response(json.dumps(shown(m, {**run, "shipped": False})), status_code=202, media_type="application/json",
                    headers={"Location": f"/api/runs/{run['id']}"})


@router.delete("/api/runs/{run_id}", response_model=RunSummary, responses=deps.errors(401, 403, 404, 409, 429))
def delete_run(run_id: str, m: deps.RunsDep, _: auth.InstructorDep):
    """Cancel a queued or running run (it stops at once; its finished snapshots stay), or delete a
    finished one with its model sets (call it again after a cancel to delete). 409: an example run
    shipped with the models (read-only). A run whose trainer is gone answers with its settled state."""
    return shown(m, m.cancel_or_delete(run_id))


# The 404 before the stream is JSON; the stream itself is text/event-stream
NOT_FOUND_JSON = {404: {"description": "No such run", "content": {
    "application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}}}


@router.get("/api/runs/{run_id}/events", response_class=Response,
            responses={**documented(EVENTS, "the run's history first, then live"), **NOT_FOUND_JSON})
def run_events(run_id: str, request: Request, m: deps.RunsDep, _: Annotated[dict, Depends(existing_run)]):
    """Server-sent events: the run's whole history first, then live, one event per trainer line (data =
    the JSON line, ids count lines), plus `status` (the run summary) whenever its status or snapshots
    change; the events are listed under the 200 answer. The stream ends once the run has ended (or the
    server stops). A reconnecting EventSource sends Last-Event-ID and gets only the lines after it."""
    return stream(m, run_id, request)
