"""POST /api/finetune-plan: what a fine-tune of this task at these sizes will do, before Start
(issue 42 musts 2 and 3): the sizes and arms skipped and why, whether the test part can carry a
comparison, and how long it will take here (app/finetunes/plan.py). Instructor only, like starting one."""
from __future__ import annotations

from fastapi import APIRouter

from .. import auth, deps
from ..contract.families import for_page
from ..errors import ApiError
from ..finetunes.plan import full_plan
from ..schemas.finetune_plan import Plan, PlanRequest

router = APIRouter(tags=["fine-tuning"])


@router.post("/api/finetune-plan", response_model=Plan, responses=deps.errors(400, 401, 403, 404, 409, 413, 422, 429))
def plan_finetune(body: PlanRequest, m: deps.FinetunesDep, registry: deps.RegistryDep, settings: deps.SettingsDep,
                  _: auth.InstructorDep):
    """The plan of a start with this task, sizes, arms, seeds and model (nothing runs): its training and
    test parts, the sizes and arms the trainer will skip with its reason, `evidence` (whether the test
    part reaches the minimum for comparing two arms, in the sentence the trainer's summary will say)
    and `estimate`: how long it will take on this machine, from this model's step time measured here
    (the first plan of a model set measures it, a few seconds; while a training holds the machine, or
    past a wait, the estimate has no seconds and says why)."""
    if (body.task is None) == (body.task_text is None):
        raise ApiError("give exactly one of task (a shipped task's name) or task_text (a task file's text)", "task")
    if body.task is not None and body.task not in [t["name"] for t in m.tasks()]:
        raise ApiError(f"task must be one of {', '.join(t['name'] for t in m.tasks()) or '(none)'}", "task")
    meta = registry.meta(body.model)  # 404 naming model
    for spec in for_page("finetune"):
        if spec.name not in meta.families:
            raise ApiError(f"model {meta.id!r} has no {spec.label} to fine-tune; pick a set with a {spec.label}",
                           "model", status=409)
    return deps.respond(Plan, full_plan(body, meta.folder, meta.id, m.step_times, settings.max_corpus_bytes,
                                          settings.run_nice))
