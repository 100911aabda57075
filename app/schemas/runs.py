"""Training runs (app/routers/runs.py): what a run may be given and how one is listed."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..contract import FAMILIES, SPECS
from ..runs.rules import MAX_MINUTES, MIN_CORPUS_CHARS, MIN_MINUTES

# What a run trains when the request names nothing: every trainable family a set needs (GPT and BERT).
DEFAULT_FAMILIES = [n for n, s in SPECS.items() if s.trainable and not s.optional]


class StartRun(BaseModel):
    """Start a training run (instructor only)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    corpus: str | None = Field(None, description=f"The text to train on (plain UTF-8 text, at least {MIN_CORPUS_CHARS:,} "
                               "characters; the server's cap is in GET /api/runs `limits`). Omitted: the shipped Shakespeare.")
    name: str | None = Field(None, max_length=60, description="What the class calls it, shown in the model picker "
                             "(e.g. 'Our poems'): one line of plain text (no control, bidirectional or zero-width "
                             "characters, not only spaces).")
    families: list[Literal[FAMILIES]] = Field(DEFAULT_FAMILIES, min_length=1, max_length=len(FAMILIES),
                                              description="Which models to train, from " + ", ".join(FAMILIES)
                                              + " (several: one text, one skeleton, one objective each).")
    minutes: float | None = Field(None, description=f"Wall-clock training budget, {MIN_MINUTES:g} to {MAX_MINUTES:g} minutes "
                                  "(default: the preset's).")
    preset: str | None = Field(None, max_length=32, description="Model size and schedule by name (GET /api/runs `presets`); "
                               "default: the one nearest to `minutes`.")
    seed: int = Field(1337, ge=0, le=2**31 - 1)


class RunSummary(BaseModel):
    """A training run as listed (GET /api/runs/{id} adds models, commands and sample)."""

    model_config = ConfigDict(extra="allow")
    id: str = Field(description="Run id; also the model set id of its final models (snapshots: '<id>@<step>').")
    name: str = Field(description="Shown in the model pickers ('<name> · final', '<name> · step N').")
    status: Literal["queued", "running", "finished", "cancelled", "failed", "interrupted", "cancelling", "deleted"]
    created: float = Field(description="Unix time.")
    started: float | None = None
    ended: float | None = None
    reason: str | None = Field(None, description="Why it failed (e.g. 'disk full: ...'), was cancelled or interrupted.")
    settings: dict = Field(description="families, minutes, preset, seed, threads.")
    corpus: dict = Field(description="source (shipped|text), characters per split, documents, vocab_size.")
    progress: dict = Field(description="Latest per family: step, loss, tokens_per_s, elapsed_s, remaining_s, fraction.")
    validation: dict = Field(description="Latest validation loss per family.")
    metrics: dict | None = Field(None, description="Held-out metrics of the finished run (its own test split).")
    snapshots: list[dict] = Field(description="Model sets written so far: name, step, id (usable as `model`), final.")
    steps: dict | None = None
    shipped: bool = Field(False, description="An example run that comes with the models (read-only).")


class RunList(BaseModel):
    runs: list[RunSummary]
    active: str | None = Field(description="The run training now (one at a time), if any.")
    training_available: bool = Field(description="False when the train extra is not installed.")
    enable: str | None = Field(description="How to enable training, when it is not available.")
    storage_problem: str | None = Field(description="Why runs cannot be stored now (data folder not writable, disk full).")
    presets: list[dict] = Field(description="Budget presets: name, minutes, and the model size per family.")
    instructor: bool = Field(description="Whether this browser is logged in as the instructor.")
    limits: dict = Field(description="min_corpus_chars, max_corpus_bytes, min_minutes, max_minutes, max_runs.")
