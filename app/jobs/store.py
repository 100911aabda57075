"""A job's files on disk: its record (run.json, job.json) written aside and renamed into place (a full disk leaves the
old file whole and no temporary behind), a full disk recognised, and what a run shows to clients
(relative names only: no server paths, no process ids)."""
from __future__ import annotations

import errno
import json
import re
import shutil
from pathlib import Path

from ..contract import write_json, write_text  # noqa: F401 - jobs write through the contract's helpers

DISK_FULL = "disk full: the data folder has no space left; delete runs or free space on its disk"
MIN_FREE_BYTES = 256 * 1024  # below this the data folder counts as full
PRIVATE = ("pid", "exit_code")  # for the server only
ABSOLUTE = re.compile(r"(?<![\w.~])/(?:[\w.@+-]+/)+([\w.@+-]+)")  # any path left: its last name


def read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def is_disk_full(e: BaseException) -> bool:
    return isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)


def low_space(folder: Path) -> bool:
    try:
        return shutil.disk_usage(folder).free < MIN_FREE_BYTES
    except OSError:
        return False


def public(run: dict, run_dir: Path, data_dir: Path, repo: Path) -> dict:
    """The run (or fine-tune) as clients see it: server paths made relative, process ids dropped."""
    swaps = [(str(run_dir), f"{run_dir.parent.name}/{run_dir.name}"), (str(data_dir), "data"),
             (str(repo) + "/", ""), (str(repo), ".")]
    return scrub(run, swaps)


def scrub(value, swaps: list[tuple[str, str]]):
    """`value` (JSON-like) with each (old, new) of `swaps` replaced in its strings, any absolute path
    left cut to its last name, and the server-only keys (PRIVATE) dropped."""
    if isinstance(value, str):
        for old, new in swaps:
            value = value.replace(old, new)
        return ABSOLUTE.sub(r"\1", value)
    if isinstance(value, dict):
        return {k: scrub(v, swaps) for k, v in value.items() if k not in PRIVATE}
    if isinstance(value, list):
        return [scrub(v, swaps) for v in value]
    return value


def last_event_id(header: str | None) -> int:
    """A Last-Event-ID header as a line count: ASCII digits, at most 18 of them; anything else
    (a superscript two, 5,000 digits, a sign) is ignored and the stream starts from the beginning."""
    header = (header or "").strip()
    return int(header) if 0 < len(header) <= 18 and header.isascii() and header.isdigit() else 0
