"""How long one fine-tune training step takes on this machine, per model set (issue 42 must 3): the
measured unit of the estimate before Start (app/finetunes/plan.py, app/contract/finetune_cost.py).

The server never imports torch: the trainer measures (`python -m training finetune --model DIR
--task T --time-step`, niced like every trainer), once per model set, and the answer is kept in
memory and in DATA_DIR/finetune-step-times.json (written aside, renamed into place), keyed by the
set's id and its bert.onnx (size and time: a replaced BERT is measured again). Each fine-tune
measures it again at its start; its start line's estimate replaces the kept one (`learn`).

A plan must never hang the page: a measurement runs in a thread of its own; a request waits for it
at most `wait_s` and otherwise answers without the time, saying why (still measuring, or the
machine is busy: while a training holds the slot nothing is measured, as it would slow the class's
run and take long itself; the running fine-tune's own measurement arrives with its start line). A
measurement past MEASURE_TIMEOUT_S is killed; a failed one is not tried again for RETRY_S.
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..contract import write_json
from ..jobs.kernel import training_available

log = logging.getLogger("app")
FILE = "finetune-step-times.json"
MEASURE_TIMEOUT_S = 120.0
WAIT_S = 15.0
RETRY_S = 60.0
KEYS = ("step_seconds", "small_step_seconds", "start_seconds", "padded_length", "context", "device")


def measure_command(model_dir: str, task: str) -> list[str]:
    return [sys.executable, "-m", "training", "finetune", "--model", model_dir, "--task", task, "--time-step"]


class StepTimes:
    def __init__(self, data_dir: Path, repo: Path, niced: Callable[[list[str]], list[str]],
                 busy: Callable[[], str | None], wait_s: float = WAIT_S, timeout_s: float = MEASURE_TIMEOUT_S):
        self.path = Path(data_dir) / FILE
        self.repo, self.niced, self.busy = repo, niced, busy
        self.wait_s, self.timeout_s = wait_s, timeout_s
        self.command = measure_command  # (model_dir, task) -> argv; the tests swap it
        self.lock = threading.Lock()
        self.entries: dict[str, dict] = {}
        self.read_at: float | None = None  # the file's mtime when last read
        self.running: dict[str, threading.Event] = {}
        self.failed: dict[str, tuple[float, str]] = {}

    @staticmethod
    def key(model_id: str, folder: Path) -> str:
        try:
            st = (Path(folder) / "bert.onnx").stat()
            return f"{model_id}:{st.st_size}:{st.st_mtime_ns}"
        except OSError:
            return f"{model_id}:?"

    def _load(self) -> None:
        """The kept entries (another worker may have written the file since)."""
        try:
            mtime = self.path.stat().st_mtime
        except OSError:
            return
        if mtime == self.read_at:
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            self.entries = self.entries | {k: v for k, v in data.items() if isinstance(v, dict)}
        except (OSError, ValueError, AttributeError):  # not an object of entries: none kept, as if new
            pass
        self.read_at = mtime

    def _store(self, key: str, entry: dict) -> None:
        with self.lock:
            self._load()
            self.entries[key] = entry
            try:
                write_json(self.path, self.entries)
                self.read_at = self.path.stat().st_mtime
            except OSError as e:  # kept in memory; the file is a cache
                log.warning("fine-tune step times not saved: %s", e)

    def known(self, model_id: str, folder: Path) -> dict | None:
        with self.lock:
            self._load()
            return self.entries.get(self.key(model_id, folder))

    def learn(self, model_id: str, folder: Path, timing: dict, source: str) -> None:
        """A measurement made elsewhere (a fine-tune's start line) replaces the kept one."""
        if isinstance(timing, dict) and all(isinstance(timing.get(k), (int, float)) and timing[k] > 0
                                            for k in ("step_seconds", "start_seconds", "padded_length")):
            self._store(self.key(model_id, folder), {k: timing.get(k) for k in KEYS} | {"source": source,
                                                                                       "measured": time.time()})

    def measuring(self, model_id: str, folder: Path) -> bool:
        """Is a measurement of this set under way (ask again in a moment)?"""
        with self.lock:
            return self.key(model_id, folder) in self.running

    def get(self, model_id: str, folder: Path, task: str | None, task_text: str | None) -> tuple[dict | None, str | None]:
        """(the step time of this model set, None) or (None, why there is none yet)."""
        key = self.key(model_id, folder)
        entry = self.known(model_id, folder)
        if entry is not None:
            return entry, None
        with self.lock:
            failed = self.failed.get(key)
            if failed and time.time() - failed[0] < RETRY_S:
                return None, failed[1]
            done = self.running.get(key)
            if done is None and not training_available():
                return None, "this server cannot train (the train extra is not installed), so a step cannot be timed"
            if done is None:
                holder = self.busy()
                if holder:
                    return None, (f"it is not measured while a training holds the machine ({holder}): timing one "
                                  "training step now would slow that down and take long; it is measured once the "
                                  "machine is free")
                done = self.running[key] = threading.Event()
                threading.Thread(target=self._measure, args=(key, model_id, str(folder), task, task_text, done),
                                 daemon=True, name=f"step-time {model_id}").start()
        if not done.wait(self.wait_s):
            return None, ("this machine is still timing one training step of this model (the first time only, a few "
                          "seconds): the estimate comes when it is done")
        entry = self.known(model_id, folder)
        if entry is not None:
            return entry, None
        return None, self.failed.get(key, (0, "the step time could not be measured"))[1]

    def _measure(self, key: str, model_id: str, folder: str, task: str | None, task_text: str | None,
                 done: threading.Event) -> None:
        try:
            with tempfile.TemporaryDirectory() as tmp:
                if task is None:  # an uploaded text: the trainer reads it from a file
                    task = str(Path(tmp) / "task.jsonl")
                    Path(task).write_text(task_text or "", encoding="utf-8")
                env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1",
                       "PYTHONPATH": os.pathsep.join(p for p in (str(self.repo), os.environ.get("PYTHONPATH")) if p)}
                proc = subprocess.run(self.niced(self.command(folder, task)), cwd=self.repo, env=env, text=True,
                                      capture_output=True, stdin=subprocess.DEVNULL, timeout=self.timeout_s)
            lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
            timing = next((e for e in lines if e.get("event") == "step_time"), None)
            if timing is None:
                said = next((e.get("message") for e in lines if e.get("event") == "error"), None)
                raise RuntimeError(said or (proc.stderr.strip().splitlines() or ["no answer"])[-1][:200])
            self._store(key, {k: timing.get(k) for k in KEYS} | {"source": "measured", "measured": time.time()})
        except subprocess.TimeoutExpired:
            self._fail(key, f"measuring one training step took longer than {self.timeout_s:g} s (the machine is busy)")
        except Exception as e:  # noqa: BLE001 - an estimate is words before the run, never a reason to fail a plan
            log.warning("fine-tune step time of %s not measured: %s", model_id, e)
            self._fail(key, f"one training step could not be timed here ({str(e)[:200]})")
        finally:
            with self.lock:
                self.running.pop(key, None)
            done.set()

    def _fail(self, key: str, why: str) -> None:
        with self.lock:
            self.failed[key] = (time.time(), why)
