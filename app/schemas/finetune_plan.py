"""Request and response bodies of POST /api/finetune-plan (app/routers/finetune_plan.py)."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..contract.finetune_evidence import MIN_RARE, MIN_TEST_TEXTS, MIN_TOKEN_TEXTS

Size = Annotated[int, Field(ge=1, le=100_000)] | Literal["all"]


class PlanRequest(BaseModel):
    """What a start would run: exactly one of `task` and `task_text`, and the sizes."""

    model_config = ConfigDict(extra="forbid", strict=True)
    task: str | None = Field(None, min_length=1, max_length=64, description="A shipped task's name (GET /api/tasks).")
    task_text: str | None = Field(None, description="An uploaded task file's text (JSON Lines), as POST /api/finetunes "
                                  "takes it.")
    sizes: list[Size] = Field([8, 32, 128, "all"], min_length=1, max_length=8,
                              description="Numbers of labelled examples per fine-tune ('all' = every training example).")


class Skipped(BaseModel):
    size: int
    why: str = Field(description="Why the trainer will skip it, in its own words.")


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
