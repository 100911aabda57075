"""POST /api/finetune-plan: what a fine-tune of this task at these sizes will do, before Start
(issue 42 must 2): the sizes skipped and why, and whether the test part can carry a comparison
(app/finetunes/plan.py). Instructor only, like starting one."""
from __future__ import annotations

from fastapi import APIRouter

from .. import auth, deps
from ..errors import ApiError
from ..finetunes.plan import plan
from ..schemas.finetune_plan import Plan, PlanRequest

router = APIRouter(tags=["fine-tuning"])


@router.post("/api/finetune-plan", response_model=Plan, responses=deps.errors(400, 401, 403, 413, 422, 429))
def plan_finetune(body: PlanRequest, m: deps.FinetunesDep, settings: deps.SettingsDep, _: auth.InstructorDep):
    """The plan of a start with this task and these sizes (nothing runs): its training and test parts,
    the sizes the trainer will skip with its reason, and `evidence`: whether the test part reaches the
    minimum for comparing two arms, in the sentence the trainer's summary will say."""
    if (body.task is None) == (body.task_text is None):
        raise ApiError("give exactly one of task (a shipped task's name) or task_text (a task file's text)", "task")
    if body.task is not None and body.task not in [t["name"] for t in m.tasks()]:
        raise ApiError(f"task must be one of {', '.join(t['name'] for t in m.tasks()) or '(none)'}", "task")
    return deps.respond(Plan, plan(body.task, body.task_text, list(body.sizes), settings.max_corpus_bytes))
