"""What a fine-tune will do, said before Start (issue 42 must 2): POST /api/finetune-plan
(app/routers/finetune_plan.py) and each job's settings["plan"] (app/finetunes/jobs.py). The task is
read by the trainer's own parser (a shipped task with the trainer's seed, or the uploaded text), and
the plan is app/contract/finetune_evidence.py's: the training and test parts, the sizes the trainer
will skip and why (its words), and whether the test part can carry a comparison of two arms."""
from __future__ import annotations

import json
from functools import lru_cache

from ..contract.finetune_evidence import plan as make_plan
from ..contract.task_format import Task, parse_task
from . import task_file
from .tasks import TABLE, TASKS_DIR


@lru_cache(maxsize=16)
def shipped_task(name: str) -> Task:
    entry = json.loads((TASKS_DIR / TABLE).read_text(encoding="utf-8"))["shipped"][name]
    return parse_task((TASKS_DIR / entry["file"]).read_bytes(), name, 0)


def task_of(name: str | None, text: str | None, max_bytes: int) -> Task:
    """The task a start with these fields would run (an uploaded text is checked as POST /api/finetunes
    checks it: a 413 or a 422 naming task_text and its line)."""
    if text is not None:
        task_file.parse(text, max_bytes)
        return parse_task(text, "uploaded")
    return shipped_task(name)


def plan(name: str | None, text: str | None, sizes: list, max_bytes: int) -> dict:
    return make_plan(task_of(name, text, max_bytes), sizes)


def job_plan(settings: dict, text: str | None, max_bytes: int) -> dict | None:
    """The plan kept with a job (None for snapshots, which fine-tune one size at every snapshot, or
    when the task cannot be read here: the trainer then says what it says)."""
    if settings.get("snapshots"):
        return None
    try:
        return plan(settings.get("task"), text, settings["sizes"], max_bytes)
    except Exception:  # noqa: BLE001 - the plan is words before the run; never a reason not to start
        return None
