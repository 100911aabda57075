"""The run manager: `python -m training.live` as a subprocess, its status, its model sets.

app/ never imports torch or training/: a run is a child process (at lower CPU priority, `nice`,
with at most cores - 1 threads) that prints one JSON object per line and writes a run folder:

    DATA_DIR/runs/<id>/run.json        status, settings, corpus, metrics (written here, atomically)
                       corpus.txt      the text it trains on (pasted or uploaded)
                       progress.jsonl  every event line (written by the trainer): the history
                       snapshots/step-NNNNNN/, final/   model sets, each renamed into place whole
                       stderr.log      the trainer's own messages (the reason when it dies)
                       trainer.lock    held by the trainer while it lives (app/runs/liveness.py)

One run trains at a time across every worker: the worker that starts it holds an flock on
DATA_DIR/train.lock until the process ends (a crashed worker's lock goes with it). A run says
`queued`/`running` only while facts agree: a run whose trainer lock is free while nobody holds
train.lock is settled (`settle`) from what its trainer last wrote, by any worker, at start-up
and on every scan. Nothing is signalled but a trainer proven alive (lock held, same PID start time).
A write that fails (a full disk) keeps the run's state in memory, retried on each scan. Any worker
serves the finished runs: each one scans the data folder every few seconds and adds new model
sets to its registry (loaded on first use, a bounded number in memory). The events stream is
the progress file tailed, so a student's stream can be served by any worker.

Runs shipped with the models (MODELS_DIR/runs/<id>/, same shape, finished) are listed and served
beside the class's own, read-only: "watch it learn" works on a fresh install with no training.
"""
from __future__ import annotations

import json
import logging
import os
import re
import secrets
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..contract import EXAMPLES_FILE, examples_from_corpus
from ..errors import ApiError
from .lifecycle import Lifecycle
from .liveness import trainer_alive
from .rules import (ACTIVE, TEST_PRESETS, TRAIN_MISSING, check_corpus, clean_name, test_presets, training_available,
                    training_presets)
from .watch import verdict, watch
from .store import DISK_FULL, is_disk_full, low_space, read_json, write_json, write_text

log = logging.getLogger("app")
REPO = Path(__file__).resolve().parents[2]
RUN_ID = re.compile(r"^(r-[0-9]{8}-[0-9]{6}-[0-9a-f]{4}|example-[a-z0-9-]{1,40})$")
ENDINGS = ("finished", "cancelled", "error")  # the trainer's last words


def last_words(run_dir: Path) -> dict:
    """The trainer's last `finished`, `cancelled` or `error` line in progress.jsonl (its tail), or {}."""
    try:
        with open(run_dir / "progress.jsonl", "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 65536))
            lines = f.read().splitlines()
    except OSError:
        return {}
    for raw in reversed(lines):
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("event") in ENDINGS:
            return event
    return {}


class RunManager(Lifecycle):
    REPO = REPO
    RECORD = "run.json"

    def __init__(self, settings, registry):
        self.settings, self.registry = settings, registry
        self.data_dir = Path(settings.data_dir)
        self.runs_dir = self.data_dir / "runs"
        self.shipped_dir = Path(settings.models_dir) / "runs"  # example runs that come with the models
        self.lock = threading.RLock()
        self.procs: dict[str, subprocess.Popen] = {}  # runs this process started
        self.registered: dict[str, Path] = {}  # model set id -> folder, as added to the registry
        self.unsaved: dict[str, dict] = {}  # run id -> fields a failed write (full disk) could not store
        self.problem: str | None = None  # why runs cannot be stored (data folder not writable)
        self.stopping = threading.Event()  # server shutdown: streams end, runs cut short are "interrupted"
        self._presets: list[dict] | None = None
        self.slot_users: list = []  # callables: who else holds the training slot ({id, name} or None)

    # ---- startup, settling, folders, the registry ------------------------------------------------
    def startup(self) -> None:
        """Settle every run from facts, clear what a crash left half-made, serve every run's model
        sets. (The data folder is made by the first run: serving alone writes nothing.)"""
        if self.runs_dir.is_dir():
            try:
                self.settle(clean=True)
            except OSError as e:
                self.problem = f"the data folder is not writable ({e.strerror})"
        self.sync_registry()

    def scan(self) -> None:
        """Every few seconds, on every worker: settle dead runs, store what could not be stored,
        serve new model sets."""
        if self.runs_dir.is_dir():
            self.settle()
        self.sync_registry()

    def folder(self, run_id: str) -> Path:
        return self.runs_dir / run_id

    def _settle_one(self, run_id: str) -> None:
        """A run whose trainer is gone ends as its trainer's last words say (Lifecycle.settle)."""
        self._clean_partial(self.runs_dir / run_id)
        self._update(run_id, **verdict(self, run_id, last_words(self.runs_dir / run_id), None))

    def _clean_orphans(self) -> None:
        for trash in self.data_dir.glob(".deleted-*"):
            shutil.rmtree(trash, ignore_errors=True)
        for d in self.runs_dir.iterdir():
            if RUN_ID.match(d.name) and d.is_dir():
                if not (d / "run.json").exists() and not trainer_alive(d):
                    log.warning("removing %s: a run folder without run.json (its start was cut short)", d.name)
                    shutil.rmtree(d, ignore_errors=True)
                for tmp in d.glob(".run.json.*.tmp"):
                    tmp.unlink(missing_ok=True)

    @staticmethod
    def _clean_partial(run_dir: Path) -> None:
        for folder in (run_dir, run_dir / "snapshots"):
            for p in folder.glob(".tmp-*") if folder.is_dir() else []:
                shutil.rmtree(p, ignore_errors=True)

    def model_sets(self, run: dict) -> list[tuple[str, Path, dict]]:
        """(id, folder, registry fields) of the run's complete sets: its snapshots, then final."""
        run_dir, out = self.run_dir(run["id"]), []
        for folder in sorted((run_dir / "snapshots").glob("step-*")):
            if folder.is_dir() and (folder / "vocab.json").exists():
                step = int(folder.name.split("-")[1])
                out.append((f"{run['id']}@{step}", folder,
                            {"name": f"{run['name']} · step {step}", "kind": "snapshot", "run": run["id"], "step": step}))
        final = run_dir / "final"
        if (final / "vocab.json").exists():
            steps = (run.get("steps") or {}).values()
            out.append((run["id"], final, {"name": f"{run['name']} · final", "kind": "run", "run": run["id"],
                                           "step": sum(steps) if steps else None}))
        return out

    def sync_registry(self) -> None:
        """Add new complete sets to this worker's registry and drop those of deleted runs."""
        if self.registry is None:
            return
        with self.lock:  # the watcher thread and the periodic scan may both call this
            self._sync_registry()

    def _sync_registry(self) -> None:
        seen: dict[str, Path] = {}
        for run in self.list():
            for set_id, folder, fields in self.model_sets(run):
                seen[set_id] = folder
                if set_id not in self.registered:
                    try:  # a set written before examples.json existed: from the run's own held-out text
                        own = (folder / EXAMPLES_FILE).exists()
                        examples = None if own else examples_from_corpus(self.run_dir(run["id"]) / "corpus")
                        self.registry.add(folder, id=set_id, examples=examples, **fields)
                        self.registered[set_id] = folder
                    except (OSError, ValueError) as e:
                        log.warning("run set %s not added: %s", set_id, e)
        for set_id in [i for i in self.registered if i not in seen]:
            self.registry.drop(set_id)
            del self.registered[set_id]

    # ---- reading ---------------------------------------------------------------------------------
    def run_dir(self, run_id: str) -> Path:
        """A class run's folder, or a shipped example run's."""
        own = self.runs_dir / run_id
        shipped = self.shipped_dir / run_id
        return shipped if not own.is_dir() and shipped.is_dir() else own

    def _read(self, folder: Path, shipped: bool) -> dict:
        return {**read_json(folder / "run.json"), **self.unsaved.get(folder.name, {}), "shipped": shipped}

    def list(self) -> list[dict]:
        runs = []
        for folder, shipped in ((self.runs_dir, False), (self.shipped_dir, True)):
            if not folder.is_dir():
                continue
            for d in folder.iterdir():
                if RUN_ID.match(d.name):
                    try:
                        runs.append(self._read(d, shipped))
                    except (OSError, ValueError):
                        continue  # a run being created or deleted
        return sorted(runs, key=lambda r: r.get("created", 0), reverse=True)

    def get(self, run_id: str) -> dict:
        if RUN_ID.match(run_id):
            folder = self.run_dir(run_id)
            try:
                return self._read(folder, folder != self.runs_dir / run_id)
            except (OSError, ValueError):
                pass
        raise ApiError(f"no training run called {run_id!r} (GET /api/runs lists them)", "run_id", status=404)

    def active(self) -> dict | None:
        return next((r for r in self.list() if r["status"] in ACTIVE), None)

    def storage_problem(self) -> str | None:
        """What stops runs from being stored, for /api/health and GET /api/runs (no server paths)."""
        if self.problem:
            return self.problem
        if self.unsaved or (self.runs_dir.is_dir() and low_space(self.data_dir)):
            return DISK_FULL
        return None

    def presets(self) -> list[dict]:
        """The budget presets (asked of training/ once, through a subprocess), test presets when enabled."""
        if self._presets is None:
            self._presets = training_presets(REPO)
        return (self._presets or []) + (test_presets() if self.settings.run_test_presets else [])

    # ---- starting --------------------------------------------------------------------------------
    def start(self, corpus: str | None, name: str | None, families: list[str], minutes: float,
              preset: str | None, seed: int) -> dict:
        s = self.settings
        if not training_available():
            raise ApiError(TRAIN_MISSING, None, status=503)
        name = clean_name(name)
        if corpus is not None:
            check_corpus(corpus, s.max_corpus_bytes)
        names = [p["name"] for p in self.presets()]
        if preset is not None and preset not in names:
            raise ApiError(f"preset must be one of {', '.join(names) or '(none: training is not installed)'}", "preset")
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
            fd = self._try_lock()
        except OSError as e:
            raise self._storage_error(e) from None
        if fd is None:
            running = self.active() or next(filter(None, (user() for user in self.slot_users)), None)
            what = f"{running['id']} ({running['name']})" if running else "another run"
            raise ApiError(f"a run is already training: {what}; cancel it or wait for it to finish", None, status=409)
        try:
            self.settle()  # a dead run left "running" by a killed worker does not block this one
            stored = [r for r in self.list() if not r.get("shipped")]
            if any(r["status"] in ACTIVE for r in stored):
                raise ApiError(f"a run is already training: {self.active()['id']}; cancel it or wait for it "
                               f"to finish", None, status=409)
            if len(stored) >= s.max_runs:
                raise ApiError(f"{len(stored)} runs are stored, the limit is {s.max_runs}: delete a run first",
                               None, status=507)
            run_id = time.strftime("r-%Y%m%d-%H%M%S-", time.gmtime()) + secrets.token_hex(2)
            run_dir = self.runs_dir / run_id
            threads = s.run_threads or max(1, (os.cpu_count() or 2) - 1)
            run = {"id": run_id, "name": name or ("Shakespeare" if corpus is None else "Our text"),
                   "status": "queued", "created": time.time(), "started": None, "ended": None, "reason": None,
                   "settings": {"families": families, "minutes": minutes, "preset": preset, "seed": seed,
                                "threads": threads},
                   "corpus": {"source": "shipped" if corpus is None else "text",
                              "characters": None if corpus is None else len(corpus)},
                   "progress": {}, "validation": {}, "models": None, "metrics": None, "commands": None,
                   "snapshots": [], "sample": None, "pid": None, "exit_code": None}
            try:  # the folder is complete (corpus, then run.json) or not there at all
                run_dir.mkdir(parents=True)
                if corpus is not None:
                    write_text(run_dir / "corpus.txt", corpus)
                write_json(run_dir / "run.json", run)
            except OSError as e:
                shutil.rmtree(run_dir, ignore_errors=True)
                raise self._storage_error(e) from None
            cmd = self._command(run, corpus is not None)
            threading.Thread(target=self._watch, args=(run, cmd, fd), name=f"run-{run_id}", daemon=True).start()
            fd = None  # the watcher releases it when the process ends
            return run
        finally:
            if fd is not None:
                os.close(fd)

    @staticmethod
    def _storage_error(e: OSError) -> ApiError:
        if is_disk_full(e):
            return ApiError(f"{DISK_FULL}; nothing was started", None, status=507)
        return ApiError(f"the data folder is not writable ({e.strerror}); start the server with a writable "
                        f"--data-dir", None, status=503)

    def _command(self, run: dict, has_corpus: bool) -> list[str]:
        st, run_dir = run["settings"], self.runs_dir / run["id"]
        cmd = [sys.executable, "-m", "training.live", "--out", str(run_dir), "--families", ",".join(st["families"]),
               "--minutes", f"{st['minutes']:g}", "--seed", str(st["seed"]), "--threads", str(st["threads"]),
               "--export-cache", str(self.data_dir / "traced"), "--die-with-parent"]
        if has_corpus:
            cmd += ["--corpus", str(run_dir / "corpus.txt")]
        if st["preset"] in TEST_PRESETS:
            cmd += ["--overrides", json.dumps(TEST_PRESETS[st["preset"]])]
        elif st["preset"]:
            cmd += ["--preset", st["preset"]]
        nice = shutil.which("nice")
        return [nice, "-n", str(self.settings.run_nice), *cmd] if nice and self.settings.run_nice else cmd

    def _watch(self, run: dict, cmd: list[str], lock_fd: int) -> None:
        watch(self, run, cmd, lock_fd)

    # ---- cancelling and deleting -----------------------------------------------------------------
    def cancel_or_delete(self, run_id: str) -> dict:
        run = self.get(run_id)
        if run.get("shipped"):
            raise ApiError(f"{run_id} is an example run shipped with the models; it cannot be deleted", "run_id",
                           status=409)
        run_dir = self.runs_dir / run_id
        if run["status"] in ACTIVE:
            if run_id not in self.procs and not trainer_alive(run_dir):
                self.settle()  # its trainer is gone (a worker killed mid-run): the facts, not "cancelling"
                run = self.get(run_id)
                if run["status"] not in ACTIVE:
                    return run
            self._cancel(run_id)
            return {**run, "status": "cancelling"}
        trash = self.data_dir / f".deleted-{run_id}"
        for set_id, _, _ in self.model_sets(run):
            if self.registry is not None:
                self.registry.drop(set_id)
            self.registered.pop(set_id, None)
        run_dir.rename(trash)  # gone from listings at once, then removed
        shutil.rmtree(trash, ignore_errors=True)
        self.unsaved.pop(run_id, None)
        return {**run, "status": "deleted"}
