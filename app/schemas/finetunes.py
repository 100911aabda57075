"""Request and response bodies of the fine-tune API (app/routers/finetunes.py)."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from . import Strict, UnknownChar

ARMS = ("readout", "full", "probe", "scratch", "ngram")
ARM_NAMES = {"readout": "the pretrained model's own head read as the task declares (nothing trained; zero labels and "
                        "one threshold)",
             "full": "pretrained, fine-tuned by LP-FT (probe head first, then everything at a small rate)",
             "probe": "pretrained, frozen + head (linear probe)",
             "scratch": "same model (or a smaller one) from random weights (from scratch)",
             "ngram": "logistic regression on character 1-3-grams (no pretraining)"}
MAX_CLASSIFY_CHARS = 1000


class StartFinetune(Strict):
    """Start a fine-tune (instructor only): the same labelled examples, budget rule and seeds for each arm.
    Exactly one of `task` and `task_text` (the other omitted or null)."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [
        {"required": ["task"], "properties": {"task": {"type": "string"}, "task_text": {"type": "null"}}},
        {"required": ["task_text"], "properties": {"task_text": {"type": "string"}, "task": {"type": "null"}}}]})
    model: str = Field(min_length=1, max_length=64, description="The pretrained BERT: a model set id from GET "
                       "/api/models (the shipped set, a run, or a snapshot `<run>@<step>`).")
    task: str | None = Field(None, min_length=1, max_length=64,
                             description="A shipped task's name (GET /api/tasks). Give this or `task_text`.")
    task_text: str | None = Field(None, description="An uploaded task file's text: JSON Lines, one example per line, "
                                  '{"text", "label"} (whole text) or {"text", "tags"} (one tag character per '
                                  'character), optional "split": "train"|"test".')
    task_name: str | None = Field(None, min_length=1, max_length=60, description="What to call an uploaded task.")
    arms: list[Literal["readout", "full", "probe", "scratch", "ngram"]] = Field(
        list(ARMS), min_length=1, max_length=5, description=(
            "readout: the pretrained model's own head, nothing trained (BERT's masked-LM head as a per-character task "
            "declares, GPT's likelihood for a whole-input task with two labels), at zero labels and with one threshold; "
            "full: LP-FT, a logistic-regression head on the frozen encoder, then everything fine-tuned; probe: a "
            "logistic regression on the frozen pretrained encoder's features; scratch: the same architecture (and a "
            "smaller one) from random weights, all trained; ngram: a logistic regression on character 1-3-grams (no "
            "pretraining)."))
    sizes: list[int | Literal["all"]] = Field([8, 32, 128, "all"], min_length=1, max_length=8,
                                              description="Numbers of labelled examples to train on ('all' = every "
                                              "training example).")
    seeds: int = Field(5, ge=1, le=10, description="Repeats per arm and size, each with its own sample of examples "
                       "and its own head initialisation (the 95 % intervals resample these and the held-out examples).")
    steps: int | None = Field(None, ge=1, le=5000, description="Train the trained arms exactly this many steps "
                              "(default: the validation slice chooses the learning rate and the step).")
    snapshots: bool = Field(False, description="Fine-tune from every snapshot of the run `model` belongs to, to "
                            "plot downstream accuracy against pretraining steps.")
    readout: Any = Field(None, description=(
        "How the readout arm reads the pretrained model's own head, overriding the task's declaration (the "
        "shipped table's, or an uploaded file's first line {\"readout\": ...}); passed to the trainer as --readout. "
        "Per-character tasks: {\"insert\": CHARS} (p(one of CHARS) at a [MASK] inserted after each character), "
        "{\"masked\": \"other\"} (1 - p(the character there)) or {\"masked\": \"upper\"} (p(capital)), optionally "
        "with \"positions\": \"letters\" (score letters only); whole-input tasks with two labels: {\"gpt\": LABEL} "
        "(GPT's likelihood; LABEL = what the likelier texts are); \"none\": no readout. Omitted or null: the task's "
        "own declaration (a task that declares nothing has no readout). A readout that is not in this vocabulary or "
        "does not fit the task is a 422 naming `readout`."),
        json_schema_extra={"oneOf": [{"type": "object"}, {"const": "none"}, {"type": "null"}]})


class Interval(BaseModel):
    mean: float
    lo: float | None = Field(description="Lower end of the 95 % interval (none with one seed).")
    hi: float | None
    n: int = Field(description="How many fine-tunes (seeds) it is over.")


class FinetuneSummary(BaseModel):
    """A fine-tune as listed."""

    model_config = ConfigDict(extra="allow")
    id: str
    status: Literal["queued", "running", "finished", "cancelled", "failed", "interrupted", "cancelling", "deleted"]
    created: float
    started: float | None = None
    ended: float | None = None
    reason: str | None = Field(None, description="Why it failed, was cancelled or interrupted.")
    settings: dict[str, Any] = Field(description="model, model_name, task, task_label, arms, sizes, seeds, steps, readout, "
                                     "snapshots, run, threads.")


class FinetuneDetail(FinetuneSummary):
    start: dict[str, Any] | None = Field(description="The trainer's start line: task, kind (sequence|token), "
                                         "labels, arms, sizes, seeds, n_train, n_test, jobs, estimate (seconds, "
                                         "step_seconds, jobs, workers, text, time_left: how long it will take here).")
    results: list[dict[str, Any]] = Field(description="One per finished fine-tune: arm, size, seed, accuracy "
                                          "(held-out), n_test, seconds, time_left {seconds, text} (and step, from "
                                          "snapshots).")
    done: int = Field(description="Finished fine-tunes so far.")
    total: int | None = Field(description="Fine-tunes in the whole grid.")
    by: Literal["size", "step"] = Field(description="What the x axis is: labelled examples, or pretraining steps.")
    so_far: dict[str, dict[str, Interval]] = Field(description="Per arm and size (or step): mean and 95 % interval "
                                                   "(Student's t over seeds) of the results so far; the readout's zero-label score under size \"0\".")
    summary: dict[str, dict[str, Interval]] | None = Field(description="The trainer's final summary, per arm and size.")
    difference: dict[str, Any] | None = Field(description="The trainer's paired differences (full minus scratch ...).")
    metric: Literal["accuracy", "f1"] | None = Field(None, description="The score: accuracy (whole-input task) or "
                                                     "F1 of the rarer tags (per-character task).")
    final: dict[str, Any] | None = Field(None, description="The rest of the trainer's summary: headline, differences "
                                         "(full minus each arm), same_answer, steps, cpu_seconds, majority, skipped.")
    gpt_way: dict[str, Any] | None = Field(description="GPT's zero-training answer: each label scored as a "
                                           "continuation of a prompt.")
    classifiers: list[dict[str, Any]] = Field(description="Exported classifiers: arm, dir, accuracy, and `model` "
                                              "(the id to pass to POST /api/classify).")
    error: str | None


class FinetuneList(BaseModel):
    finetunes: list[FinetuneSummary]
    active: str | None = Field(description="The fine-tune running now, if any.")
    training_available: bool
    instructor: bool
    limits: dict[str, Any] = Field(description="max_task_bytes, max_seeds, arms, handoff (the class hand-off's grid: "
                                   "arms, sizes, seeds, sized to about 2 minutes on a 2-core laptop).")


class TaskList(BaseModel):
    tasks: list[dict[str, Any]] = Field(description="Shipped tasks: name, kind, labels, sizes, provenance (as the "
                                        "trainer lists them).")
    available: bool = Field(description="False when the train extra is not installed.")


class ClassifyRequest(Strict):
    model: str = Field(min_length=1, max_length=64, description="A classifier's model set id (a fine-tune's "
                       "`classifiers[].model`).")
    text: str = Field(min_length=1, max_length=MAX_CLASSIFY_CHARS,
                      description="The text to label; it must fit the classifier's context minus 2.")


class CharLabel(BaseModel):
    char: str
    probabilities: list[float] = Field(description="One per label, in `labels` order.")
    prediction: str


class ClassifyResponse(BaseModel):
    model_config = ConfigDict(protected_namespaces=())
    model: str
    task: str | None
    arm: str | None
    kind: Literal["sequence", "token"]
    labels: list[str]
    probabilities: list[float] | None = Field(description="Whole-input task: one per label.")
    prediction: str | None = Field(description="Whole-input task: the most probable label.")
    characters: list[CharLabel] | None = Field(description="Per-character task: one entry per character of text.")
    unknown_chars: list[UnknownChar]
    accuracy: float | None = Field(description="The classifier's held-out accuracy (its card).")
