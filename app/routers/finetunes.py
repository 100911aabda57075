"""The fine-tune lab: the /finetune page, fine-tune jobs (app/finetunes/jobs.py) and classifying
with a finished classifier. Watching and classifying are open to everyone; starting, cancelling
and deleting need the instructor (app/auth.py)."""
from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from .. import auth, deps
from ..config import Settings
from ..contract import readouts
from ..contract.finetune_cost import HANDOFF
from ..contract.families import for_page
from ..errors import ApiError
from ..finetunes import task_file
from ..finetunes.jobs import FinetuneManager
from ..registry import Registry
from ..runs import RunManager
from ..runs.rules import clean_name
from ..schemas.finetunes import (ARMS, ClassifyRequest, ClassifyResponse, FinetuneDetail, FinetuneList,
                                 FinetuneSummary, StartFinetune, TaskList)
from ..jobs import ACTIVE, public, training_available
from ..finetunes.stream import EVENTS, stream
from ..jobs.stream import documented

router = APIRouter(tags=["fine-tuning"])
SUMMARY_KEYS = ("id", "status", "created", "started", "ended", "reason", "settings")


def existing(finetune_id: str, m: deps.FinetunesDep) -> dict:
    return m.get(finetune_id)


def shown(m: FinetuneManager, job: dict) -> dict:
    """A job as clients see it: no server paths (model and run folders), no process id."""
    return public(job, m.folder(job["id"]), m.data_dir, m.REPO)


def summary(job: dict, m: FinetuneManager) -> dict:
    return shown(m, {k: job.get(k) for k in SUMMARY_KEYS})


def shown_detail(m: FinetuneManager, job_id: str) -> dict:
    return FinetuneDetail.model_validate(shown(m, m.detail(job_id))).model_dump(mode="json")


@router.get("/api/tasks", response_model=TaskList)
def list_tasks(m: deps.FinetunesDep):
    """The shipped fine-tuning tasks (labelled data files in the repository, with provenance)."""
    return {"tasks": m.tasks(), "available": training_available()}


@router.get("/api/finetunes", response_model=FinetuneList)
def list_finetunes(request: Request, m: deps.FinetunesDep, s: deps.SettingsDep):
    """Every stored fine-tune, newest first, with its status and settings."""
    jobs = m.list()
    return {"finetunes": [summary(j, m) for j in jobs], "active": next((j["id"] for j in jobs if j["status"] in ACTIVE), None),
            "training_available": training_available(), "instructor": auth.is_instructor(request),
            "limits": {"max_task_bytes": s.max_corpus_bytes, "max_seeds": 10, "arms": list(ARMS), "handoff": HANDOFF}}


@router.get("/api/finetunes/{finetune_id}", response_model=FinetuneDetail, responses=deps.errors(404))
def get_finetune(finetune_id: str, m: deps.FinetunesDep):
    """One fine-tune: its settings, every finished fine-tune's held-out accuracy, the mean and 95 %
    interval per arm and size so far, the trainer's summary once done, and its classifiers."""
    return deps.respond(FinetuneDetail, shown(m, m.detail(finetune_id)))


def check_start(body: StartFinetune, m: FinetuneManager, registry: Registry, settings: Settings,
                runs: RunManager) -> tuple[dict, str | None]:
    """The settings a job runs with, every field checked (4xx naming it)."""
    if (body.task is None) == (body.task_text is None):
        raise ApiError("give exactly one of task (a shipped task's name) or task_text (a task file's text)", "task")
    name = clean_name(body.task_name, "task_name")  # shown in lists as a run's name is: the same rule
    meta = registry.meta(body.model)
    for spec in for_page("finetune"):  # the family the lab fine-tunes (its spec lists the fine-tune page)
        if spec.name not in meta.families:
            raise ApiError(f"model {body.model!r} has no {spec.label} to fine-tune; pick a set with a {spec.label}",
                           "model", status=409)
    if body.task is not None:
        names = [t["name"] for t in m.tasks()]
        if body.task not in names:
            raise ApiError(f"task must be one of {', '.join(names) or '(none: the trainer lists no tasks)'}", "task")
        label = body.task
        shape = next(t for t in m.tasks() if t["name"] == body.task)
    else:
        shape = parsed = task_file.parse(body.task_text, settings.max_corpus_bytes)
        label = name or f"uploaded task ({parsed['examples']} examples)"
    if body.readout is not None:  # overrides the task's own declaration; it must fit the task's kind and labels
        problem = readouts.fit_problem(body.readout, shape["kind"], shape["labels"])
        if problem:
            raise ApiError(f"readout: {problem}", "readout")
    sizes = list(dict.fromkeys(body.sizes))
    if any(isinstance(s, int) and not 1 <= s <= 100_000 for s in sizes):
        raise ApiError("sizes must be numbers of examples between 1 and 100000, or 'all'", "sizes")
    run_dir = None
    if body.snapshots:
        if meta.run is None:
            raise ApiError("snapshots needs a model from a training run (a run or one of its snapshots)", "snapshots")
        run_dir = str(runs.run_dir(meta.run))
    settings = {"model": meta.id, "model_name": meta.name, "model_dir": str(meta.folder), "task": body.task,
                "task_label": label, "arms": list(dict.fromkeys(body.arms)), "sizes": sizes, "seeds": body.seeds,
                "steps": body.steps, "snapshots": body.snapshots, "run": meta.run, "run_dir": run_dir,
                "readout": body.readout}
    return settings, body.task_text


@router.post("/api/finetunes", status_code=202, response_model=FinetuneSummary,
             responses=deps.errors(400, 401, 403, 404, 409, 413, 422, 503, 507))
def start_finetune(body: StartFinetune, m: deps.FinetunesDep, registry: deps.RegistryDep, settings: deps.SettingsDep,
                   runs: deps.RunsDep, _: auth.InstructorDep):
    """Start a fine-tune (instructor only): each arm on the same labelled examples, steps and seeds.
    202 with the job; 409 while the training slot is busy (a run or another fine-tune); a bad task
    file is a 422 naming `task_text` and the line."""
    job_settings, text = check_start(body, m, registry, settings, runs)
    job = m.start(job_settings, text)
    return Response(json.dumps(summary(job, m)), status_code=202, media_type="application/json",
                    headers={"Location": f"/api/finetunes/{job['id']}"})


@router.delete("/api/finetunes/{finetune_id}", response_model=FinetuneSummary, responses=deps.errors(401, 403, 404))
def delete_finetune(finetune_id: str, m: deps.FinetunesDep, _: auth.InstructorDep):
    """Cancel a running fine-tune (its finished classifiers stay), or delete a finished one with them."""
    return summary(m.cancel_or_delete(finetune_id), m)


NOT_FOUND_JSON = {404: {"description": "No such fine-tune", "content": {
    "application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}}}


@router.get("/api/finetunes/{finetune_id}/events", response_class=Response,
            responses={**documented(EVENTS, "the fine-tune's history first, then live"), **NOT_FOUND_JSON})
def finetune_events(finetune_id: str, request: Request, m: deps.FinetunesDep,
                    _: Annotated[dict, Depends(existing)]):
    """Server-sent events: the whole history first, then live, one event per trainer line (`start`,
    `result`, `classifier`, `gpt_way`, `summary`, `error`; ids count lines), plus `status` (the job
    as GET /api/finetunes/{id} answers it) whenever it changes. Ends once the job has ended.
    Last-Event-ID resumes after that line (a header that is not a line number is ignored)."""
    return stream(m.events_path(finetune_id), request, lambda: shown_detail(m, finetune_id), m.stopping)


@router.post("/api/classify", response_model=ClassifyResponse, responses=deps.INFERENCE_ERRORS)
def classify(req: ClassifyRequest, registry: deps.RegistryDep):
    """A fine-tuned classifier's answer: for a whole-input task, each label's probability; for a
    per-character task, each character's labels' probabilities."""
    clf = registry.classifier(req.model)
    if len(req.text) > clf.room:
        raise ApiError(f"text is {len(req.text)} characters; this classifier reads at most {clf.room} "
                       f"(its context of {clf.context} minus [CLS] and [SEP])", "text")
    out = clf.classify(req.text)
    card = clf.card
    accuracy, task = card.get("accuracy", card.get("held_out_accuracy")), card.get("task")
    task = task.get("name") if isinstance(task, dict) else task
    return deps.respond(ClassifyResponse, {**out, "model": registry.meta(req.model).id,
                                           "task": task if isinstance(task, str) else None,
                                           "arm": card.get("arm") if isinstance(card.get("arm"), str) else None,
                                           "accuracy": accuracy if isinstance(accuracy, (int, float)) else None})
