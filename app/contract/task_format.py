"""Fine-tune task files: JSON Lines, checked the same way by the app (uploads) and by training/.

One example per line:

    whole-input task   {"text": "what a lovely day", "label": "positive"}
    per-character task {"text": "to be or not", "tags": "100000000000"}   one tag character per
                                                                          code point of text
    optional on both   "split": "train" | "test"   (else a seeded split: SPLIT_TEST_FRACTION of
                       each label goes to test); "source", "id": free text, kept for provenance
    optional first line {"readout": {...}}   how the lab's readout arm reads the pretrained model's
                       own head for this task (app/contract/readouts.py: {"insert": CHARS},
                       {"masked": "other" | "upper"} (+ "positions": "letters"), {"gpt": LABEL}, "none");
                       checked against the task's kind and labels; Task.meta["readout"]

The labels of a whole-input task are the distinct "label" values; those of a per-character task
are the distinct tag characters. A task needs 2 to MAX_LABELS labels and at least one training and
one test example; `heldout_problem` says when it is still too small for a held-out score (the
server refuses such an upload, the trainer stops before anything runs). Blank lines are skipped.
Errors name the line (1-based) and the field; `parse_task` collects up to MAX_REPORTED of them
before it gives up, so an instructor sees them all at once. Plain Python only (no torch, numpy or FastAPI): the server validates uploads with it.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from . import readouts

KINDS = ("sequence", "token")  # whole-input ([CLS] head) / per-character (a head on every position)
SPLITS = ("train", "test")
MAX_BYTES = 2_000_000       # the size cap of a task file
MAX_EXAMPLES = 20_000
MAX_TEXT_CHARS = 2_000      # code points of one example's text (a model reads at most its context)
MAX_LABEL_CHARS = 40
MIN_LABELS, MAX_LABELS = 2, 20
MAX_REPORTED = 20
SPLIT_TEST_FRACTION = 0.3
ALLOWED_FIELDS = {"text", "label", "tags", "split", "source", "id"}


@dataclass(frozen=True)
class Example:
    text: str
    label: str | None = None   # whole-input tasks
    tags: str | None = None    # per-character tasks: len(tags) == len(text)
    split: str | None = None   # as given in the file, or None (seeded split)
    line: int = 0


@dataclass
class Task:
    name: str
    kind: str                  # "sequence" | "token"
    labels: list[str]
    train: list[Example]
    test: list[Example]
    meta: dict = field(default_factory=dict)

    def summary(self) -> dict:
        return {"name": self.name, "kind": self.kind, "labels": self.labels,
                "n_train": len(self.train), "n_test": len(self.test)} | self.meta


class TaskFormatError(ValueError):
    """One or more problems, each {"line": int | None, "field": str | None, "message": str}."""

    def __init__(self, errors: list[dict]):
        self.errors = errors
        first = errors[0]
        where = ", ".join(p for p in (f"line {first['line']}" if first["line"] else "",
                                      f"field '{first['field']}'" if first["field"] else "") if p)
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(f"{where}: {first['message']}{more}" if where else first["message"] + more)


def _problem(line: int | None, fld: str | None, message: str) -> dict:
    return {"line": line, "field": fld, "message": message}


def _declaration(number: int, raw: str, first: bool, problems: list[dict]) -> tuple[bool, object]:
    """(is this line a readout declaration, its value). A line with a "readout" key is one; it must be the
    file's first line and hold nothing else."""
    try:
        obj = json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        return False, None
    if not isinstance(obj, dict) or "readout" not in obj:
        return False, None
    if not first:
        problems.append(_problem(number, "readout", "the readout is declared on the file's first line only, "
                                 "alone: {\"readout\": {...}}"))
    elif len(obj) != 1:
        problems.append(_problem(number, "readout", "the declaration line holds only \"readout\" (the examples "
                                 f"start on the next line); also here: {', '.join(sorted(k for k in obj if k != 'readout'))}"))
    else:
        problem = readouts.shape_problem(obj["readout"])
        if problem:
            problems.append(_problem(number, "readout", problem))
    return True, obj["readout"]


def _check_line(number: int, raw: str, problems: list[dict]) -> Example | None:
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as e:
        problems.append(_problem(number, None, f"not valid JSON ({e.msg} at column {e.colno})"))
        return None
    if not isinstance(obj, dict):
        problems.append(_problem(number, None, "each line must be a JSON object like {\"text\": ..., \"label\": ...}"))
        return None
    before = len(problems)
    for key in obj:
        if key not in ALLOWED_FIELDS:
            problems.append(_problem(number, key, f"unknown field (allowed: {', '.join(sorted(ALLOWED_FIELDS))})"))
    text = obj.get("text")
    if "text" not in obj:
        problems.append(_problem(number, "text", "missing"))
    elif not isinstance(text, str):
        problems.append(_problem(number, "text", "must be a string"))
    elif not text.strip():
        problems.append(_problem(number, "text", "is empty"))
    elif len(text) > MAX_TEXT_CHARS:
        problems.append(_problem(number, "text", f"is {len(text)} characters long; at most {MAX_TEXT_CHARS}"))
    has_label, has_tags = "label" in obj, "tags" in obj
    label, tags = obj.get("label"), obj.get("tags")
    if has_label == has_tags:
        problems.append(_problem(number, "label", "give exactly one of 'label' (whole-input task) or 'tags' (per-character task)"
                                 if has_label else "missing (or 'tags' for a per-character task)"))
    elif has_label:
        if not isinstance(label, str) or not label.strip():
            problems.append(_problem(number, "label", "must be a non-empty string"))
        elif len(label) > MAX_LABEL_CHARS:
            problems.append(_problem(number, "label", f"is longer than {MAX_LABEL_CHARS} characters"))
    elif not isinstance(tags, str) or not tags:
        problems.append(_problem(number, "tags", "must be a non-empty string, one tag character per character of text"))
    elif isinstance(text, str) and len(tags) != len(text):
        problems.append(_problem(number, "tags", f"has {len(tags)} tag characters but text has {len(text)} characters"))
    split = obj.get("split")
    if "split" in obj and split not in SPLITS:
        problems.append(_problem(number, "split", "must be \"train\" or \"test\""))
    if len(problems) > before:
        return None
    return Example(text, label if has_label else None, tags if has_tags else None, split, number)


def _seeded_split(examples: list[Example], key, seed: int) -> tuple[list[Example], list[Example]]:
    """Lines with a "split" keep it; the rest are split per label (stratified), reproducibly."""
    train = [e for e in examples if e.split == "train"]
    test = [e for e in examples if e.split == "test"]
    free: dict[str, list[Example]] = {}
    for e in examples:
        if e.split is None:
            free.setdefault(key(e), []).append(e)
    rng = random.Random(seed)
    for group in sorted(free):
        items = list(free[group])
        rng.shuffle(items)
        n_test = round(len(items) * SPLIT_TEST_FRACTION) if len(items) > 1 else 0
        test += items[:n_test]
        train += items[n_test:]
    order = {id(e): i for i, e in enumerate(examples)}
    return sorted(train, key=lambda e: order[id(e)]), sorted(test, key=lambda e: order[id(e)])


def parse_task(data: str | bytes, name: str = "uploaded", seed: int = 0) -> Task:
    """Parse and check a whole task file; raises TaskFormatError listing what is wrong."""
    if isinstance(data, bytes):
        if len(data) > MAX_BYTES:
            raise TaskFormatError([_problem(None, None, f"the file is {len(data):,} bytes; at most {MAX_BYTES:,}")])
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise TaskFormatError([_problem(data[:e.start].count(b"\n") + 1, None, "not UTF-8 text")]) from None
    if len(data.encode("utf-8")) > MAX_BYTES:
        raise TaskFormatError([_problem(None, None, f"the file is over {MAX_BYTES:,} bytes")])
    problems: list[dict] = []
    examples: list[Example] = []
    readout, decl_line, first = None, None, True
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        is_decl, value = _declaration(number, raw, first, problems) if '"readout"' in raw else (False, None)
        if is_decl and first:
            readout, decl_line = value, number
        first = False
        if is_decl:
            if len(problems) >= MAX_REPORTED:
                break
            continue
        if len(examples) >= MAX_EXAMPLES:
            problems.append(_problem(number, None, f"more than {MAX_EXAMPLES:,} examples"))
            break
        ex = _check_line(number, raw, problems)
        if ex is not None:
            examples.append(ex)
        if len(problems) >= MAX_REPORTED:
            break
    if problems:
        raise TaskFormatError(problems)
    if not examples:
        raise TaskFormatError([_problem(None, "text", "the file has no examples")])
    kind = "sequence" if examples[0].label is not None else "token"
    for e in examples:
        if (e.label is not None) != (kind == "sequence"):
            fld, first = ("tags", "label") if kind == "sequence" else ("label", "tags")
            problems.append(_problem(e.line, fld, f"line {examples[0].line} uses '{first}': one file holds one kind of task"))
    if problems:
        raise TaskFormatError(problems[:MAX_REPORTED])
    if kind == "sequence":
        labels = sorted({e.label for e in examples})
    else:
        labels = sorted({t for e in examples for t in e.tags})
    fld = "label" if kind == "sequence" else "tags"
    if len(labels) < MIN_LABELS:
        raise TaskFormatError([_problem(None, fld, f"only one label ({labels[0]!r}); a task needs at least {MIN_LABELS}")])
    if len(labels) > MAX_LABELS:
        raise TaskFormatError([_problem(None, fld, f"{len(labels)} different labels; at most {MAX_LABELS}")])
    if decl_line is not None:
        problem = readouts.fit_problem(readout, kind, labels)
        if problem:
            raise TaskFormatError([_problem(decl_line, "readout", problem)])
    train, test = _seeded_split(examples, (lambda e: e.label) if kind == "sequence" else (lambda e: ""), seed)
    if not train or not test:
        raise TaskFormatError([_problem(None, "split", f"no {'training' if not train else 'test'} examples; "
                                        "a task needs both (mark lines \"split\": \"test\" or give more examples)")])
    return Task(name, kind, labels, train, test, {"readout": readout} if decl_line is not None else {})


def heldout_problem(task: Task) -> str | None:
    """Why the task cannot give a held-out score yet (None when it can). Every arm of the fine-tune
    lab keeps a slice of its labelled examples aside to decide when to stop, so a whole-input task
    needs at least two training examples of each label (one to learn from, one to check on) and a
    test example of each label; a per-character task needs two training texts and a test text."""
    if task.kind == "sequence":
        for where, rows in (("training", task.train), ("test (held-out)", task.test)):
            missing = [lab for lab in task.labels if not any(e.label == lab for e in rows)]
            if missing:
                return (f"no {where} example of the label {missing[0]!r}: the held-out score needs every label on "
                        "both sides (label more examples, or mark some \"split\": \"test\")")
        need = 2 * len(task.labels)
        if len(task.train) < need:
            return (f"only {len(task.train)} training examples; with {len(task.labels)} labels a fine-tune needs at "
                    f"least {need} (one of each label to learn from and one to check when to stop)")
    elif len(task.train) < 2:
        return "only one training text; a per-character fine-tune needs at least 2 (one to learn from, one to check on)"
    return None


def check_task(data: str | bytes) -> list[dict]:
    """The problems of a task file ([] when it is fine)."""
    try:
        parse_task(data)
    except TaskFormatError as e:
        return e.errors
    return []
