"""An uploaded task file, checked before any process starts, by the one parser the trainer uses
(app/contract/task_format.py): a file `python -m training finetune --task FILE` accepts, the
server accepts, and the other way round (the shipped files included, with their "source" fields).

What this module adds is only the HTTP shape of a refusal: a file over the server's byte limit is a
413, a malformed one a 422 naming `task_text` and the line of the first problem (all problems, up
to the parser's limit, are in the message)."""
from __future__ import annotations

from ..contract.task_format import TaskFormatError, heldout_problem, parse_task
from ..errors import ApiError


class TaskFileError(ApiError):
    def __init__(self, detail: str, line: int | None = None):
        where = f"task_text line {line}: " if line else "task_text: "
        super().__init__(where + detail, "task_text")
        self.line = line


def _sentence(problem: dict) -> str:
    field = f"field '{problem['field']}' " if problem.get("field") else ""
    return field + problem["message"]


def parse(text: str, max_bytes: int) -> dict:
    """{"kind", "labels", "examples", "splits"} (+ "readout" when its first line declares one) of a valid file; TaskFileError (422) or a 413 otherwise."""
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > max_bytes:
        raise ApiError(f"task_text is {size:,} bytes; the limit is {max_bytes:,} bytes", "task_text", status=413)
    bad = next((i for i, ch in enumerate(text) if "\ud800" <= ch <= "\udfff"), None)
    if bad is not None:  # an escaped \ud800-\udfff in the JSON body: half of a character, not UTF-8 text
        raise TaskFileError("must be UTF-8 text; it holds a lone surrogate (half of a character)",
                            text.count("\n", 0, bad) + 1)
    try:
        task = parse_task(text, "uploaded")
    except RecursionError:  # a line of JSON nested thousands deep
        raise TaskFileError("a line is JSON nested too deeply; each line is one flat object like "
                            '{"text": ..., "label": ...}') from None
    except TaskFormatError as e:
        first, more = e.errors[0], len(e.errors) - 1
        rest = "; ".join(f"line {p['line']}: {_sentence(p)}" if p.get("line") else _sentence(p) for p in e.errors[1:])
        detail = _sentence(first) + (f" (and {more} more: {rest})" if more else "")
        raise TaskFileError(detail, first.get("line")) from None
    problem = heldout_problem(task)
    if problem:
        raise TaskFileError(problem)
    given = {s: sum(e.split == s for e in task.train + task.test) for s in ("train", "test")}
    n = len(task.train) + len(task.test)
    return {"kind": task.kind, "labels": task.labels, "examples": n,
            "splits": given | {"unsplit": n - given["train"] - given["test"]},
            **({"readout": task.meta["readout"]} if "readout" in task.meta else {})}
