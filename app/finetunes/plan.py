"""What a fine-tune will do, said before Start (issue 42 musts 2 and 3): POST /api/finetune-plan
(app/routers/finetune_plan.py) and each job's settings["plan"] (app/finetunes/jobs.py). The task is
read by the trainer's own parser (a shipped task with the trainer's seed, or the uploaded text), and
the plan is app/contract/finetune_evidence.py's: the training and test parts, the sizes the trainer
will skip and why (its words), and whether the test part can carry a comparison of two arms. With
the arms, seeds and model it adds the arms that will run (the readout only where the task has one:
app/contract/readouts.py why_not, the trainer's rule) and how long it will take here: the cost model
(app/contract/finetune_cost.py) with this model set's step time measured on this machine
(app/finetunes/step_times.py), carried to this task by its texts' length."""
from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

from ..contract import finetune_cost as cost
from ..contract import finetune_load, readouts
from ..contract.finetune_evidence import plan as make_plan
from ..contract.task_format import Task, parse_task
from ..errors import ApiError
from . import task_file
from .tasks import TABLE, TASKS_DIR

WORKERS = 2  # the trainer's --workers default: min(2, cores)


@lru_cache(maxsize=16)
def shipped_task(name: str) -> Task:
    """A shipped task as the trainer loads it (training/finetune/tasks.py load_task): its file, and the
    table's readout unless the file's first line declares its own."""
    entry = json.loads((TASKS_DIR / TABLE).read_text(encoding="utf-8"))["shipped"][name]
    task = parse_task((TASKS_DIR / entry["file"]).read_bytes(), name, 0)
    if "readout" not in task.meta and "readout" in entry:
        task.meta["readout"] = entry["readout"]
    return task


def task_of(name: str | None, text: str | None, max_bytes: int) -> Task:
    """The task a start with these fields would run (an uploaded text is checked as POST /api/finetunes
    checks it: a 413 or a 422 naming task_text and its line)."""
    if text is not None:
        task_file.parse(text, max_bytes)
        return parse_task(text, "uploaded")
    return shipped_task(name)


def plan(name: str | None, text: str | None, sizes: list, max_bytes: int) -> dict:
    return make_plan(task_of(name, text, max_bytes), sizes)


def arms_that_run(task: Task, arms: list[str], readout, has_gpt: bool) -> tuple[list[str], list[dict]]:
    """(the arms the trainer will run, [{"arm", "why"}] of those it will skip): `readout` is the start's
    override (None: the task's own declaration)."""
    declared = task.meta.get("readout") if readout is None else readout
    why = readouts.why_not(declared, task.kind, task.labels, has_gpt) if "readout" in arms else None
    return [a for a in arms if not (a == "readout" and why)], ([{"arm": "readout", "why": why}] if why else [])


def estimate(task: Task, sizes: list, arms: list[str], seeds: int, readout, folder: Path, timing: dict | None,
             why: str | None, steps: int | None = None, nice: int = 0) -> dict:
    """{"seconds", "step_seconds", "jobs", "workers", "text", "why", "load"}: the time a start would take
    here, with the machine's load now (the trainer runs at `nice`), or (no step time yet) the grid
    without it and why."""
    declared = task.meta.get("readout") if readout is None else readout
    shape = cost.Shape(task, int((timing or {}).get("context") or 128))
    zero = "readout" in arms and readouts.zero_label(declared, task.kind)
    cores = os.cpu_count() or 1
    workers = min(WORKERS, cores)
    gpt = task.kind == "sequence" and (Path(folder) / "gpt.onnx").exists()
    if timing is None:
        jobs = cost.grid(arms, sizes, seeds, zero)
        trained = sum(1 for j in jobs if j[0] in cost.TRAINED)
        pool = min(workers, trained) if workers > 1 and trained else 1
        words = cost.grid_words(jobs, arms, sizes, seeds, workers)
        return {"seconds": None, "step_seconds": None, "jobs": len(jobs), "workers": pool,
                "text": f"How long it will take is not known yet: {why} ({words}).", "why": why, "measuring": False}
    step = timing["step_seconds"] * shape.padded / timing["padded_length"]  # this task's texts, not the measured ones
    small = timing["small_step_seconds"] / timing["step_seconds"] if timing.get("small_step_seconds") else None
    busy = finetune_load.load(workers, nice)
    est = cost.estimate(shape, arms, sizes, seeds, step, timing["start_seconds"], zero_label=zero, workers=workers,
                        cores=cores, fixed_steps=steps, small=small, export=True, gpt_way=gpt, busy=busy)
    return {k: est[k] for k in ("seconds", "step_seconds", "jobs", "workers", "text", "load")} | {"why": None,
                                                                                                 "measuring": False}


def full_plan(body, folder: Path, model_id: str, step_times, max_bytes: int, nice: int = 0) -> dict:
    """The plan of a start: the split and sizes (`plan`), the arms that run, and the estimate."""
    task = task_of(body.task, body.task_text, max_bytes)
    if body.readout is not None:  # as POST /api/finetunes: one that does not fit the task is a 422 naming it
        problem = readouts.fit_problem(body.readout, task.kind, task.labels)
        if problem:
            raise ApiError(f"readout: {problem}", "readout")
    p = make_plan(task, list(body.sizes))
    has_gpt = (Path(folder) / "gpt.onnx").exists()
    arms, skipped_arms = arms_that_run(task, list(dict.fromkeys(body.arms)), body.readout, has_gpt)
    timing, why = step_times.get(model_id, folder, body.task, body.task_text)
    est = estimate(task, p["sizes"], arms, body.seeds, body.readout, folder, timing, why, body.steps, nice)
    return p | {"arms": arms, "skipped_arms": skipped_arms,
                "estimate": est | {"measuring": timing is None and step_times.measuring(model_id, folder)}}


def job_plan(settings: dict, text: str | None, max_bytes: int) -> dict | None:
    """The plan kept with a job (None for snapshots, which fine-tune one size at every snapshot, or
    when the task cannot be read here: the trainer then says what it says)."""
    if settings.get("snapshots"):
        return None
    try:
        return plan(settings.get("task"), text, settings["sizes"], max_bytes)
    except Exception:  # noqa: BLE001 - the plan is words before the run; never a reason not to start
        return None
