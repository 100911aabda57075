"""A job's event file (the trainer's JSON lines) folded as it grows: each look reads only the bytes
appended since the last one (complete lines only), hands each new event to the kind's `fold`, and
counts the events of each kind. One per job and worker, shared by the watcher and every viewer, so
a job's history is read once per worker, never once per viewer per poll."""
from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

CHUNK = 1024 * 1024  # read per look at most (a long history is caught up over a few looks)


class EventLog:
    def __init__(self, path: Path, state=None, fold: Callable[[object, dict], None] | None = None):
        self.path, self.state, self._fold = Path(path), state, fold
        self.pos = 0
        self.counts: Counter = Counter()
        self.lock = threading.Lock()

    def new(self) -> list[dict]:
        """The events appended since the last look, each already folded into `state`."""
        with self.lock:
            return self._read()

    def folded(self, view: Callable = lambda state: state):
        """`view(state)`, every event written so far folded in (under the lock: no half-folded state)."""
        with self.lock:
            self._read()
            return view(self.state)

    def _read(self) -> list[dict]:
        out: list[dict] = []
        while True:
            try:
                with open(self.path, "rb") as f:
                    f.seek(self.pos)
                    chunk = f.read(CHUNK)
            except OSError:
                return out
            end = chunk.rfind(b"\n") + 1
            if end == 0:
                if len(chunk) == CHUNK:  # one line longer than a chunk: not an event, skipped
                    self.pos += len(chunk)
                    continue
                return out
            self.pos += end
            for raw in chunk[:end].splitlines():
                try:
                    event = json.loads(raw)
                except (ValueError, RecursionError):
                    continue
                if isinstance(event, dict):
                    self.counts[event.get("event")] += 1
                    if self._fold is not None:
                        self._fold(self.state, event)
                    out.append(event)
            if len(chunk) < CHUNK:
                return out
