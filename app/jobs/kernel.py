"""The jobs kernel: what every kind of job started from the browser shares. A kind (a pretraining
run, a fine-tune) is a spec on `Jobs`: its words and files, its command, what its events mean
(`on_event`, or a fold kept in memory), how it ends (`FINISHED`, `finished_fields`) and what it
leaves (`model_sets`, served by every worker). The kernel does the rest, once: the lifecycle and
the slot (app/jobs/lifecycle.py), starting, the watcher (app/jobs/watch.py), the event stream
(app/jobs/stream.py), listing, cancelling and deleting, and serving the model sets.

A job's folder:  <root>/<id>/<RECORD>   status and settings (written aside, renamed into place)
                            <EVENTS>   every JSON line its trainer wrote: the history
                            stderr.log the trainer's own messages (the reason when it dies)
                            trainer.lock  held by the trainer while it lives (its PID and start time inside)
"""
from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import re
import secrets
import shutil
import subprocess
import threading
import time
from pathlib import Path

from anyio import to_thread
from pydantic import ValidationError

from ..errors import ApiError
from .eventlog import EventLog
from .lifecycle import ACTIVE, Lifecycle, hold_for_child
from .liveness import trainer_alive
from .store import DISK_FULL, is_disk_full, low_space, write_json, write_text
from .watch import verdict, watch

log = logging.getLogger("app")
REPO = Path(__file__).resolve().parents[2]
RESCAN_S = 2.0  # how often a worker settles dead jobs and looks for sets finished by another worker
TRAIN_MISSING = 'Training needs the train extra (PyTorch, onnx, onnxscript): pip install -e ".[train]"'


def training_available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "onnx", "onnxscript"))


class Jobs(Lifecycle):
    """The kernel; a kind of job sets the spec below (app/runs/manager.py, app/finetunes/jobs.py)."""
    REPO = REPO
    NOUN = "job"                  # in messages: "run", "fine-tune"
    ID_PREFIX = "j"               # ids are <prefix>-YYYYMMDD-HHMMSS-xxxx
    ID = re.compile(r"^j-[0-9]{8}-[0-9]{6}-[0-9a-f]{4}$")
    EVENTS = "events.jsonl"       # the trainer's JSON lines
    STDOUT_IS_EVENTS = True       # False: the trainer writes EVENTS itself (its stdout goes nowhere)
    HANDS_TRAINER_LOCK = True     # False: the trainer takes its own lock (training/run_lock.py)
    ENDINGS = ("error",)          # the trainer's last words (kinds of event)
    FINISHED = "finished"         # the event that says it finished
    LANDED = "snapshot"           # the event that says a model set landed
    BUSY = "the training slot is busy"
    DELETE_ONE = "delete one first"
    WORDS = {"process": "training process", "stopped": "the server stopped", "orphaned": "the server stopped"}

    def __init__(self, settings, registry, root: Path):
        self.settings, self.registry = settings, registry
        self.data_dir = Path(settings.data_dir)
        self.root = root
        self.lock = threading.RLock()
        self.procs: dict[str, subprocess.Popen] = {}  # jobs this process started
        self.registered: dict[str, Path] = {}  # model set id -> folder, as added to the registry
        self.unsaved: dict[str, dict] = {}  # job id -> fields a failed write (full disk) could not store
        self.stopping = threading.Event()  # server shutdown: streams end, jobs cut short are "interrupted"
        self.slot_users: list = []  # callables: who else holds the training slot ({id, name} or None)
        self._logs: dict[str, EventLog] = {}
        self.storage: str | None = None  # why jobs cannot be stored (data folder not writable)
        self.unfit: set[Path] = set()  # records that do not fit and could not be set aside (logged once)

    # ---- the spec --------------------------------------------------------------------------------
    def command(self, job: dict) -> list[str]:
        raise NotImplementedError

    def new_state(self):
        """What the job's events fold into, kept in memory (None: `on_event` keeps it in the record)."""
        return None

    def fold_event(self, state, event: dict) -> None:
        pass

    def on_event(self, job_id: str, event: dict) -> None:
        """The watcher's part of a new event (after it is folded)."""

    def finished_fields(self, last: dict) -> dict:
        return {}

    def model_sets(self, job: dict) -> list[tuple[str, Path, dict]]:
        """(model set id, folder, registry fields) of the job's complete model sets."""
        return []

    def label(self, job: dict) -> str:
        return job.get("name") or job["id"]

    # ---- startup, scans and the registry ---------------------------------------------------------
    def startup(self) -> None:
        """Settle every job from facts (a trainer still alive after a restart keeps its job running),
        clear what a crash left half-made, serve every job's model sets. (The data folder is made by
        the first job: serving alone writes nothing.)"""
        if self.root.is_dir():
            try:
                self.settle(clean=True)
            except OSError as e:
                self.storage = f"the data folder is not writable ({e.strerror})"
                log.warning("%ss: %s", self.NOUN, self.storage)
        self.sync_registry()

    def scan(self) -> None:
        """Every few seconds, on every worker: settle dead jobs, store what could not be stored,
        serve new model sets."""
        if self.root.is_dir():
            self.settle()
        self.sync_registry()

    def folder(self, job_id: str) -> Path:
        return self.root / job_id

    def events_path(self, job_id: str) -> Path:
        return self.folder(job_id) / self.EVENTS

    def events(self, job_id: str) -> EventLog:
        """The job's events, folded as they arrive (one log per job and worker)."""
        with self.lock:
            events = self._logs.get(job_id)
            if events is None or events.path != self.events_path(job_id):
                events = self._logs[job_id] = EventLog(self.events_path(job_id), self.new_state(), self.fold_event)
            return events

    def _settle_one(self, job_id: str) -> None:
        self._clean_partial(self.folder(job_id))
        self._update(job_id, **verdict(self, job_id, None))

    def _clean_orphans(self) -> None:
        for trash in self.data_dir.glob(f".deleted-{self.ID_PREFIX}-*"):
            shutil.rmtree(trash, ignore_errors=True)
        for d in self.root.iterdir():
            if self.ID.match(d.name) and d.is_dir():
                set_aside = any(d.glob(f"{self.RECORD}.bad-*"))  # kept for a person to read
                if not (d / self.RECORD).exists() and not set_aside and not trainer_alive(d):
                    log.warning("removing %s: a %s folder without %s (its start was cut short)", d.name, self.NOUN,
                                self.RECORD)
                    shutil.rmtree(d, ignore_errors=True)
                for tmp in d.glob(f".{self.RECORD}.*.tmp"):
                    tmp.unlink(missing_ok=True)

    @staticmethod
    def _clean_partial(job_dir: Path) -> None:
        for folder in (job_dir, job_dir / "snapshots"):
            for p in folder.glob(".tmp-*") if folder.is_dir() else []:
                shutil.rmtree(p, ignore_errors=True)

    def _add_set(self, job: dict, set_id: str, folder: Path, fields: dict) -> None:
        self.registry.add(folder, id=set_id, **fields)

    def sync_registry(self) -> None:
        """Add new complete sets to this worker's registry and drop those of deleted jobs."""
        if self.registry is None:
            return
        with self.lock:  # the watcher thread and the periodic scan may both call this
            seen: dict[str, Path] = {}
            for job in self.list():
                for set_id, folder, fields in self.model_sets(job):
                    seen[set_id] = folder
                    if set_id not in self.registered:
                        try:
                            self._add_set(job, set_id, folder, fields)
                            self.registered[set_id] = folder
                        except (OSError, ValueError) as e:
                            log.warning("%s set %s not added: %s", self.NOUN, set_id, e)
            for set_id in [i for i in self.registered if i not in seen]:
                self.registry.drop(set_id)
                del self.registered[set_id]

    # ---- reading ---------------------------------------------------------------------------------
    def _folders(self) -> list[tuple[Path, bool]]:
        """(folder holding jobs, shipped) pairs."""
        return [(self.root, False)]

    def list(self) -> list[dict]:
        jobs = []
        for root, shipped in self._folders():
            if not root.is_dir():
                continue
            for d in root.iterdir():
                if self.ID.match(d.name):
                    try:
                        jobs.append(self._read(d, shipped))
                    except (OSError, ValueError):
                        continue  # being created or deleted, or a record set aside (`_checked`)
        return sorted(jobs, key=lambda j: j["created"], reverse=True)  # a number: `problem` checked it

    def _read(self, folder: Path, shipped: bool) -> dict:
        return {**self._checked(folder), **self.unsaved.get(folder.name, {})}

    # ---- records that do not fit -----------------------------------------------------------------
    SCHEMA = None  # the pydantic model a stored record must fit: the API's own summary of it

    def problem(self, record, folder: Path) -> str | None:
        """What is wrong with a stored record, in words, or None when it fits: a JSON object whose id
        is its folder's name and that fits SCHEMA strictly (a "created" of "x" or null is not a time;
        lax coercion would pass "5" and leave a string for the sort)."""
        if not isinstance(record, dict):
            return f"not a JSON object but {type(record).__name__}"
        if record.get("id") != folder.name:
            return f"its id {record.get('id')!r} is not its folder's name"
        if self.SCHEMA is not None:
            try:
                self.SCHEMA.model_validate(record, strict=True)
            except ValidationError as e:
                first = e.errors()[0]
                return f"{'.'.join(str(k) for k in first['loc']) or 'record'}: {first['msg']}"
        return None

    def _checked(self, folder: Path) -> dict:
        """The folder's record, checked on every load: one that does not fit is set aside (renamed
        to <RECORD>.bad-<time>, kept for a person to read) with one log line, and the job is then
        not there (ValueError), so one bad file never stops the server or a listing (issue 53)."""
        path = folder / self.RECORD
        raw = path.read_bytes()  # OSError: not there (being created or deleted)
        try:
            record = json.loads(raw)
            wrong = self.problem(record, folder)
        except (ValueError, RecursionError) as e:
            wrong = f"not JSON ({str(e)[:80]})"
        if wrong is None:
            return record
        self._set_aside(path, wrong)
        raise ValueError(wrong)

    def _set_aside(self, path: Path, wrong: str) -> None:
        aside = path.with_name(f"{path.name}.bad-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}")
        try:
            path.rename(aside)
            log.warning("%s set aside as %s: %s", path, aside.name, wrong)
        except FileNotFoundError:  # another worker set it aside first (and said so)
            pass
        except OSError as e:  # a read-only folder (shipped runs): said once, then skipped on every read
            if path not in self.unfit:
                self.unfit.add(path)
                log.warning("%s does not fit and cannot be set aside (%s): %s; skipped", path, e.strerror, wrong)

    def active(self) -> dict | None:
        return next((j for j in self.list() if j["status"] in ACTIVE), None)

    def active_label(self) -> dict | None:
        """For another kind's 409: this kind's job holding the training slot, if any."""
        job = self.active()
        return {"id": job["id"], "name": self.label(job)} if job else None

    def storage_problem(self) -> str | None:
        """What stops jobs from being stored, for /api/health and the listings (no server paths)."""
        if self.storage:
            return self.storage
        if self.unsaved or (self.root.is_dir() and low_space(self.data_dir)):
            return DISK_FULL
        return None

    # ---- starting --------------------------------------------------------------------------------
    def launch(self, record, files: dict[str, str]) -> dict:
        """Start a job: take the slot, write its folder (`files`, then the record `record(id, threads)`
        makes), start the watcher. 409 while the slot is busy, 507 at the cap or on a full disk, 503
        without the train extra or a writable data folder."""
        if not training_available():
            raise ApiError(TRAIN_MISSING, None, status=503)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = self._try_lock()
        except OSError as e:
            raise self._storage_error(e) from None
        if fd is None:
            busy = self.active_label() or next(filter(None, (user() for user in self.slot_users)), None)
            what = f"{busy['id']} ({busy['name']})" if busy else "another run"
            raise ApiError(f"{self.BUSY}: {what}; cancel it or wait for it to finish", None, status=409)
        try:
            # Holding the slot, no trainer of any job lives: a job (of another worker) that still says
            # running is settled from its facts now, so it never blocks this one nor runs beside it.
            for job in self._stale():
                self._settle_one(job["id"])
            if self.active() is not None:
                raise ApiError(f"{self.BUSY}: {self.active()['id']}; cancel it or wait for it to finish", None,
                               status=409)
            stored = len([j for j in self.list() if not j.get("shipped")])
            if stored >= self.settings.max_runs:
                raise ApiError(f"{stored} {self.NOUN}s are stored, the limit is {self.settings.max_runs}: "
                               f"{self.DELETE_ONE}", None, status=507)
            job_id = time.strftime(f"{self.ID_PREFIX}-%Y%m%d-%H%M%S-", time.gmtime()) + secrets.token_hex(2)
            job_dir = self.folder(job_id)
            job = record(job_id, self.settings.run_threads or max(1, (os.cpu_count() or 2) - 1))
            try:  # the folder is complete (its files, then the record) or not there at all
                job_dir.mkdir(parents=True)
                for name, text in files.items():
                    write_text(job_dir / name, text)
                write_json(job_dir / self.RECORD, job)
                trainer_fd = hold_for_child(job_dir) if self.HANDS_TRAINER_LOCK else None
            except (OSError, UnicodeError) as e:
                shutil.rmtree(job_dir, ignore_errors=True)
                raise self._storage_error(e) from None
            threading.Thread(target=watch, args=(self, job, self.niced(self.command(job)), fd, trainer_fd),
                             name=f"{self.ID_PREFIX}-{job_id}", daemon=True).start()
            fd = None  # the trainer holds the slot; the watcher closes this copy when it ends
            return job
        finally:
            if fd is not None:
                os.close(fd)

    def niced(self, cmd: list[str]) -> list[str]:
        nice = shutil.which("nice")
        return [nice, "-n", str(self.settings.run_nice), *cmd] if nice and self.settings.run_nice else cmd

    @staticmethod
    def _storage_error(e: Exception) -> ApiError:
        if is_disk_full(e):
            return ApiError(f"{DISK_FULL}; nothing was started", None, status=507)
        if isinstance(e, UnicodeError):
            return ApiError("task_text must be UTF-8 text", "task_text")
        return ApiError(f"the data folder is not writable ({getattr(e, 'strerror', None) or e}); start the server "
                        "with a writable --data-dir", None, status=503)

    # ---- cancelling and deleting -----------------------------------------------------------------
    def cancel_or_delete(self, job_id: str) -> dict:
        """Cancel a queued or running job (it stops at once; what it finished stays), or delete an
        ended one with its model sets. A job whose trainer is gone answers with its settled state."""
        job = self.get(job_id)
        if job["status"] in ACTIVE:
            if not self.alive(job_id):
                self.settle()  # its trainer is gone (a server killed mid-job): the facts, not "cancelling"
                job = self.get(job_id)
                if job["status"] not in ACTIVE:
                    return job
            self._cancel(job_id)  # signals only the trainer proven by its lock, never the record's pid
            return {**job, "status": "cancelling"}
        with self.lock:
            for set_id, _, _ in self.model_sets(job):
                if self.registry is not None:
                    self.registry.drop(set_id)
                self.registered.pop(set_id, None)
            trash = self.data_dir / f".deleted-{job_id}"
            self.folder(job_id).rename(trash)  # gone from listings at once, then removed
            self.unsaved.pop(job_id, None)
            self._logs.pop(job_id, None)
        shutil.rmtree(trash, ignore_errors=True)
        return {**job, "status": "deleted"}

    def get(self, job_id: str) -> dict:
        raise NotImplementedError


async def rescan(manager) -> None:
    """Every RESCAN_S, on every worker: `manager.scan()` (a scan that fails is tried again)."""
    while True:
        await asyncio.sleep(RESCAN_S)
        try:
            await to_thread.run_sync(manager.scan)
        except Exception:  # noqa: BLE001 - a scan that fails is tried again
            pass
