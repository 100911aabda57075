"""A lesson's file format: an ordered list of stages, each an applet with its settings (what the
page's share link holds in its URL) or a class activity with its items. The same JSON is the
request body of POST/PUT /api/lessons, the body GET /api/lessons/{id} answers, the export file and
the shipped lessons (app/lessons/shipped/*.json).

Version 1:
    {"format": "pretraining-playground.lesson", "version": 1, "title": ..., "summary": ..., "minutes": 45,
     "stages": [
       {"kind": "applet", "title": ..., "page": "/generate", "state": {"prompt": "To be", "temperature": 0.5},
        "phones": "applet" | "projector", "notes": ...},
       {"kind": "nsp", "title": ..., "count": 5, "seed": 7}            (drawn from the bank with a stated seed)
       {"kind": "nsp", "title": ..., "items": ["q012", "q044"]}      (or picked from the bank)
       {"kind": "fill", "title": ..., "items": [{"text": ..., "positions": [3, 4]}]}
       {"kind": "concept", "title": ..., "questions": ["self-supervised", "rate-15"]}
       {"kind": "label", "title": ..., "labels": ["happy", "sad"], "lines": [...]}]}

What refers to the shipped data (NSP quiz ids, concept ids) is checked against it when a lesson is
saved (app/lessons/checks.py); the shape is checked here. A file of another format or a newer
version is refused, naming `format` or `version`."""
from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..schemas.classes import SessionLabel, SessionLine

FORMAT = "pretraining-playground.lesson"
VERSION = 1
MAX_STAGES = 40
STATE_KEY = r"^[a-z][a-z_]{0,23}$"
# Keys of an applet's URL that are the presenter's, not the stage's: the projector, the controls it
# hides, the model set (the session's), and a class's own code.
RESERVED_KEYS = ("projector", "hide", "model", "code", "key", "embed")
APPLETS = ("/mask-fill", "/spans", "/generate", "/nsp", "/attention", "/compare", "/objectives")
Title = Annotated[str, Field(min_length=1, max_length=80, description="What the stage is called on the teacher's list.")]
Notes = Annotated[str, Field("", max_length=2000, description="The teacher's own notes (never shown to the class).")]
StateValue = Union[Annotated[str, Field(max_length=1000)], bool, int, float, Annotated[list[int], Field(max_length=64)]]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class AppletStage(Body):
    kind: Literal["applet"]
    title: Title
    page: Literal[APPLETS] = Field(description="The applet's page.")  # type: ignore[valid-type]
    state: dict[Annotated[str, Field(pattern=STATE_KEY)], StateValue] = Field(
        default_factory=dict, max_length=24,
        description="The page's settings, as its share link's URL holds them (prompt, temperature, top_k, text, pos, ...).")
    phones: Literal["applet", "projector"] = Field("applet", description=(
        "What the phones show: the same applet, following the teacher (applet), or a card asking the class to "
        "look at the projector (projector)."))
    notes: Notes

    @model_validator(mode="after")
    def _no_presenter_keys(self):
        for key in self.state:
            if key in RESERVED_KEYS:
                raise ValueError(f"state may not set {key!r}: the class session sets it")
        return self


class NspStage(Body):
    kind: Literal["nsp"]
    title: Title
    count: int | None = Field(None, ge=1, le=50, description="Draw this many pairs from the NSP quiz bank ...")
    seed: int | None = Field(None, ge=0, le=2**31 - 1, description="... with this seed (the same seed, the same pairs).")
    items: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(
        None, min_length=1, max_length=50, description="Or the pairs picked from the bank, by id, in order.")
    notes: Notes

    @model_validator(mode="after")
    def _one_way(self):
        if (self.items is None) == (self.count is None):
            raise ValueError("items or count: give one of them (picked pairs, or a count drawn with a seed), not both")
        if self.count is not None and self.seed is None:
            raise ValueError("seed is required with count, so the lesson draws the same pairs every time")
        return self


class FillItem(Body):
    text: str = Field(min_length=1, max_length=120, description="A sentence.")
    positions: list[int] = Field(min_length=1, max_length=10, description="0-based positions of the characters to hide.")

    @model_validator(mode="after")
    def _inside(self):
        if any(p < 0 or p >= len(self.text) for p in self.positions):
            raise ValueError(f"positions must lie within the text (0-{len(self.text) - 1})")
        if len(set(self.positions)) != len(self.positions):
            raise ValueError("positions must not repeat")
        if any(self.text[p].isspace() for p in self.positions):
            raise ValueError("positions must not hide a space or line break")
        return self


class FillStage(Body):
    kind: Literal["fill"]
    title: Title
    items: list[FillItem] = Field(min_length=1, max_length=20)
    notes: Notes


class ConceptStage(Body):
    kind: Literal["concept"]
    title: Title
    questions: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        min_length=1, max_length=50, description="Concept-check question ids (app/concepts.json), in order.")
    notes: Notes


class LabelStage(Body):
    kind: Literal["label"]
    title: Title
    labels: list[SessionLabel] = Field(min_length=2, max_length=10)
    lines: list[SessionLine] = Field(min_length=1, max_length=200)
    notes: Notes

    @model_validator(mode="after")
    def _distinct(self):
        if len(set(self.labels)) != len(self.labels):
            raise ValueError("labels must be distinct")
        if any(not line.strip() for line in self.lines):
            raise ValueError("each of lines must hold some text")
        return self


Stage = Annotated[Union[AppletStage, NspStage, FillStage, ConceptStage, LabelStage], Field(discriminator="kind")]
CLASS_KINDS = ("nsp", "fill", "concept", "label")  # the stages that are class activities (app/classes/activities.py)


class Lesson(Body):
    format: Literal[FORMAT] = Field(FORMAT, description="What the file is.")  # type: ignore[valid-type]
    version: int = Field(VERSION, description=f"The file format's version ({VERSION}).")
    title: str = Field(min_length=1, max_length=120)
    summary: str = Field("", max_length=2000, description="What the lesson is about, for the teacher's list.")
    minutes: int | None = Field(None, ge=1, le=600, description="About how long it takes.")
    stages: list[Stage] = Field(min_length=1, max_length=MAX_STAGES)

    @model_validator(mode="before")
    @classmethod
    def _known_version(cls, data):
        if isinstance(data, dict) and isinstance(data.get("version"), int) and data["version"] != VERSION:
            # checked before the stages: a newer file's stages may be of kinds this server does not know
            raise ValueError(f"version {data['version']} is not one this server reads (it reads version {VERSION}); "
                             "upgrade the server")
        return data

    @model_validator(mode="after")
    def _one_label_stage(self):
        if sum(s.kind == "label" for s in self.stages) > 1:  # a class labels with one set of label names
            raise ValueError("stages may hold at most one label stage (a class labels with one set of label names)")
        return self


class LessonEntry(BaseModel):
    """A lesson as the list shows it."""
    id: str = Field(description="A saved lesson's number, or a shipped lesson's name.")
    title: str
    summary: str
    minutes: int | None
    stages: int
    shipped: bool = Field(description="Ships with the app: it can be copied and given, not changed.")
    updated_at: str | None
