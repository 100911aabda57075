"""An uploaded task file, checked before any process starts (the trainer checks again).

JSON Lines, one labelled example per line:
    whole-input     {"text": "...", "label": "positive"}
    per-character   {"text": "...", "tags": "0010..."}   one tag character per code point of text
    either          optional "split": "train" | "test" (otherwise the trainer splits with a seed)
Blank lines are skipped. Every problem names its line (1-based) and field."""
from __future__ import annotations

import json

from ..contract import MAX_LABELS
from ..errors import ApiError

MAX_TEXT_CHARS = 1000  # per example
MIN_EXAMPLES = 10


class TaskFileError(ApiError):
    def __init__(self, detail: str, line: int | None = None):
        where = f"task_text line {line}: " if line else "task_text: "
        super().__init__(where + detail, "task_text")
        self.line = line


def parse(text: str, max_bytes: int) -> dict:
    """{"kind", "labels", "examples", "splits"} of a valid file; TaskFileError otherwise."""
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > max_bytes:
        raise ApiError(f"task_text is {size:,} bytes; the limit is {max_bytes:,} bytes", "task_text", status=413)
    kind, labels, n, splits = None, set(), 0, {"train": 0, "test": 0, "unsplit": 0}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except ValueError:
            raise TaskFileError("is not JSON (one JSON object per line)", number) from None
        if not isinstance(row, dict):
            raise TaskFileError("must be a JSON object with text and label (or tags)", number)
        unknown = sorted(set(row) - {"text", "label", "tags", "split"})
        if unknown:
            raise TaskFileError(f"field {unknown[0]!r} is not part of the format (text, label or tags, split)", number)
        text_ = row.get("text")
        if not isinstance(text_, str) or not text_.strip():
            raise TaskFileError("field 'text' must be non-empty text", number)
        if len(text_) > MAX_TEXT_CHARS:
            raise TaskFileError(f"field 'text' is {len(text_)} characters; at most {MAX_TEXT_CHARS}", number)
        has_label, has_tags = "label" in row, "tags" in row
        if has_label == has_tags:
            raise TaskFileError("needs exactly one of the fields 'label' (whole text) or 'tags' (per character)", number)
        this = "sequence" if has_label else "token"
        if kind is not None and this != kind:
            raise TaskFileError(f"mixes kinds: earlier lines have {'label' if kind == 'sequence' else 'tags'}", number)
        kind = this
        if has_label:
            if not isinstance(row["label"], str) or not row["label"].strip():
                raise TaskFileError("field 'label' must be non-empty text", number)
            labels.add(row["label"])
        else:
            tags = row["tags"]
            if not isinstance(tags, str):
                raise TaskFileError("field 'tags' must be text, one tag character per character of 'text'", number)
            if len(tags) != len(text_):
                raise TaskFileError(f"field 'tags' has {len(tags)} characters; 'text' has {len(text_)}", number)
            labels.update(tags)
        split = row.get("split")
        if split is not None and split not in ("train", "test"):
            raise TaskFileError("field 'split' must be 'train' or 'test'", number)
        splits[split or "unsplit"] += 1
        n += 1
        if len(labels) > MAX_LABELS:
            raise TaskFileError(f"brings the number of labels past {MAX_LABELS}", number)
    if n < MIN_EXAMPLES:
        raise TaskFileError(f"has {n} examples; at least {MIN_EXAMPLES} are needed")
    if len(labels) < 2:
        raise TaskFileError(f"has one label only ({next(iter(labels))!r}); a task needs at least two")
    return {"kind": kind, "labels": sorted(labels), "examples": n, "splits": splits}
