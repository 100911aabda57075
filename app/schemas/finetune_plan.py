"""Request and response bodies of POST /api/finetune-plan (app/routers/finetune_plan.py)."""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from ..contract.finetune_evidence import MIN_RARE, MIN_TEST_TEXTS, MIN_TOKEN_TEXTS
from . import Strict
from .finetunes import ARMS, StartFinetune

Size = Annotated[int, Field(ge=1, le=100_000)] | Literal["all"]


class PlanRequest(Strict):
    """What a start would run: exactly one of `task` and `task_text`, the sizes, and for the estimate the
    model, arms, seeds (and readout, steps) as POST /api/finetunes takes them (the same strict rules: 2.0 is
    the integer 2, a field it does not know is a 422 naming it)."""

    task: str | None = Field(None, min_length=1, max_length=64, description="A shipped task's name (GET /api/tasks).")
    task_text: str | None = Field(None, description="An uploaded task file's text (JSON Lines), as POST /api/finetunes "
                                  "takes it.")
    sizes: list[Size] = Field([8, 32, 128, "all"], min_length=1, max_length=8,
                              description="Numbers of labelled examples per fine-tune ('all' = every training example).")
    model: str | None = Field(None, min_length=1, max_length=64, description="The pretrained BERT's model set "
                              "(GET /api/models); omitted: the default set. Its step time here sizes the estimate.")
    arms: list[Literal["readout", "full", "probe", "scratch", "ngram"]] = Field(
        list(ARMS), min_length=1, max_length=5, description="The arms the start would run (as POST /api/finetunes).")
    seeds: int = Field(5, ge=1, le=10, description="Repeats per arm and size (as POST /api/finetunes).")
    readout: Any = Field(None, description=StartFinetune.model_fields["readout"].description,
                         json_schema_extra={"oneOf": [{"type": "object"}, {"const": "none"}, {"type": "null"}]})
    steps: int | None = Field(None, ge=1, le=5000, description="Train the trained arms exactly this many steps (as "
                              "POST /api/finetunes).")


class Skipped(BaseModel):
    size: int
    why: str = Field(description="Why the trainer will skip it, in its own words.")


class SkippedArm(BaseModel):
    arm: str
    why: str = Field(description="Why the trainer will skip the arm, in its own words.")


class Load(BaseModel):
    load: float = Field(description="Threads of other programs that wanted a core when the plan was made (the run "
                        "queue, sampled over a fifth of a second; where /proc is missing, the 1-minute load average).")
    weighted: float = Field(description="The same threads weighed by their nice (a nice-n thread counts 1.25^-n).")
    cores: int
    nice: int = Field(description="The nice the trainer runs at (the server's run_nice).")
    factor: float = Field(description="How many times an idle machine's time the load makes the grid take "
                          "(app/contract/finetune_load.py); counted in `seconds`.")
    source: str = Field(description="How the others were read: 'run queue' or 'load average'.")
    words: str


class Estimate(BaseModel):
    seconds: float | None = Field(description="Wall-clock seconds from Start to the summary on this machine (the cost "
                                  "model, app/contract/finetune_cost.py); null while the step time is not known.")
    step_seconds: float | None = Field(description="CPU seconds of one training step of this model on this task's "
                                       "texts here (measured by the trainer, carried to this task by its texts' length).")
    jobs: int = Field(description="Fine-tunes the grid runs (the readout's zero-label rule included).")
    workers: int = Field(description="How many trained fine-tunes run at a time.")
    text: str = Field(description="In words, for the page: about how long, the step time, the grid.")
    why: str | None = Field(description="Why there is no time yet (still measuring, a training holds the machine, ...).")
    measuring: bool = Field(description="The step time is being measured now: ask again in a few seconds.")
    load: Load | None = Field(None, description="The machine's load counted in `seconds` (null while the step "
                              "time is not known).")


class Evidence(BaseModel):
    enough: bool = Field(description=f"Can the test part carry a comparison of two arms? Whole-input tasks need at "
                         f"least {MIN_TEST_TEXTS} test texts; per-character tasks {MIN_RARE} test characters of the "
                         f"rarer tag in at least {MIN_TOKEN_TEXTS} test texts.")
    kind: Literal["sequence", "token"]
    n_test: int
    rare: int | None = Field(description="Per-character tasks: test characters of a tag other than the most common.")
    minimum: str
    text: str = Field(description="One sentence, the same the trainer's summary gives after the run.")


class Plan(BaseModel):
    kind: Literal["sequence", "token"]
    labels: list[str]
    n_train: int
    n_test: int
    rare: int | None
    sizes: list[int | Literal["all"]] = Field(description="The sizes that will run.")
    skipped: list[Skipped]
    evidence: Evidence
    arms: list[str] = Field(description="The arms that will run.")
    skipped_arms: list[SkippedArm] = Field(description="The arms the trainer will skip, and why.")
    estimate: Estimate
