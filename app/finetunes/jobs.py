"""Fine-tune jobs: `python -m training finetune` as a niced subprocess, its events, its classifiers.

A job lives the one lifecycle of app/runs/lifecycle.py, as a pretraining run does: the training
slot (DATA_DIR/train.lock, handed to the trainer), liveness by the trainer's lock on its folder
(never a PID from job.json), signals only to a proven trainer, a dead or disk-full job settled
from facts by any worker (app/finetunes/watch.py has the verdict), and never two jobs in the slot.
Its folder:

    DATA_DIR/finetunes/<id>/job.json      settings and status (written aside, renamed into place)
                            task.jsonl    an uploaded task file
                            events.jsonl  the trainer's standard output: every JSON line it printed
                            stderr.log    the trainer's own messages (the reason when it dies)
                            trainer.lock  held by the trainer while it lives (its PID and start time inside)
                            out/          the trainer's --out: classifiers/<arm>/ model sets

What the job has done (results, summary, classifiers) is folded from events.jsonl
(app/finetunes/events.py), never kept twice. Finished classifiers join the registry as model sets of kind
"classifier" (id `<job>.<arm>`), on every worker (the periodic rescan of app/routers/runs.py).
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

from ..errors import ApiError
from ..runs.lifecycle import ACTIVE, Lifecycle, hold_for_child
from ..runs.liveness import trainer_alive
from ..runs.rules import TRAIN_MISSING, training_available
from ..runs.manager import REPO, RunManager
from ..runs.store import DISK_FULL, is_disk_full, write_json, write_text
from . import events as ev
from .watch import verdict, watch

log = logging.getLogger("app")
JOB_ID = re.compile(r"^f-[0-9]{8}-[0-9]{6}-[0-9a-f]{4}$")
TERMINAL = ("finished", "cancelled", "failed", "interrupted")


class FinetuneManager(Lifecycle):
    RECORD = "job.json"
    REPO = REPO

    def __init__(self, settings, registry, runs: RunManager):
        self.settings, self.registry, self.runs = settings, registry, runs
        self.data_dir = Path(settings.data_dir)
        self.jobs_dir = self.data_dir / "finetunes"
        self.lock = threading.RLock()
        self.procs: dict[str, subprocess.Popen] = {}
        self.registered: dict[str, Path] = {}
        self.unsaved: dict[str, dict] = {}  # job id -> fields a failed write (full disk) could not store
        self.stopping = threading.Event()
        self._tasks: list[dict] | None = None
        self._tasks_retry = 0.0

    # ---- startup and the registry ----------------------------------------------------------------
    def startup(self) -> None:
        """Settle every job from facts (a trainer still alive after a restart keeps its job running),
        clear what a crash left half-made, serve every job's classifiers."""
        if self.jobs_dir.is_dir():
            try:
                self.settle(clean=True)
            except OSError as e:
                log.warning("fine-tunes: the data folder is not writable (%s)", e.strerror)
        self.sync_registry()

    def scan(self) -> None:
        """Every few seconds, on every worker: settle dead jobs, store what could not be stored,
        serve new classifiers."""
        if self.jobs_dir.is_dir():
            self.settle()
        self.sync_registry()

    def folder(self, job_id: str) -> Path:
        return self.jobs_dir / job_id

    def _settle_one(self, job_id: str) -> None:
        self._update(job_id, **verdict(self, job_id, None))

    def _clean_orphans(self) -> None:
        for trash in self.data_dir.glob(".deleted-f-*"):
            shutil.rmtree(trash, ignore_errors=True)
        for d in self.jobs_dir.iterdir():
            if JOB_ID.match(d.name) and d.is_dir():
                if not (d / "job.json").exists() and not trainer_alive(d):
                    log.warning("removing %s: a fine-tune folder without job.json (its start was cut short)", d.name)
                    shutil.rmtree(d, ignore_errors=True)
                for tmp in d.glob(".job.json.*.tmp"):
                    tmp.unlink(missing_ok=True)

    def classifier_sets(self, job: dict) -> list[tuple[str, Path, dict, str]]:
        """(model set id, folder, registry fields, the event's dir) of the job's written classifiers."""
        out_dir = (self.jobs_dir / job["id"] / "out").resolve()
        sets = []
        for c in self.read_events(job["id"], kinds=("classifier",)):
            folder = (out_dir / str(c.get("dir", ""))).resolve()
            arm = re.sub(r"[^a-z0-9_-]", "", str(c.get("arm", "")).lower())[:20] or "model"
            if out_dir in folder.parents and (folder / "classifier.onnx").is_file():
                task = job["settings"]["task_label"]
                sets.append((f"{job['id']}.{arm}", folder,
                             {"name": f"{task} · {arm} ({job['id'][2:17]})", "kind": "classifier", "run": job["id"]},
                             str(c.get("dir"))))
        return sets

    def sync_registry(self) -> None:
        if self.registry is None:
            return
        with self.lock:
            seen: dict[str, Path] = {}
            for job in self.list():
                for set_id, folder, fields, _ in self.classifier_sets(job):
                    seen[set_id] = folder
                    if set_id not in self.registered:
                        try:
                            self.registry.add(folder, id=set_id, **fields)
                            self.registered[set_id] = folder
                        except (OSError, ValueError) as e:
                            log.warning("classifier %s not added: %s", set_id, e)
            for set_id in [i for i in self.registered if i not in seen]:
                self.registry.drop(set_id)
                del self.registered[set_id]

    # ---- reading ---------------------------------------------------------------------------------
    def list(self) -> list[dict]:
        jobs = []
        if self.jobs_dir.is_dir():
            for d in self.jobs_dir.iterdir():
                if JOB_ID.match(d.name):
                    try:
                        jobs.append(self._read_record(d.name))
                    except (OSError, ValueError):
                        continue  # being created or deleted
        return sorted(jobs, key=lambda j: j.get("created", 0), reverse=True)

    def get(self, job_id: str) -> dict:
        if JOB_ID.match(job_id):
            try:
                return self._read_record(job_id)
            except (OSError, ValueError):
                pass
        raise ApiError(f"no fine-tune called {job_id!r} (GET /api/finetunes lists them)", "finetune_id", status=404)

    def events_path(self, job_id: str) -> Path:
        return self.jobs_dir / job_id / "events.jsonl"

    def read_events(self, job_id: str, kinds: tuple[str, ...] | None = None) -> list[dict]:
        try:
            raw = self.events_path(job_id).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        out = []
        for line in raw[:raw.rfind("\n") + 1].splitlines():  # complete lines only
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if isinstance(e, dict) and (kinds is None or e.get("event") in kinds):
                out.append(e)
        return out

    def detail(self, job_id: str) -> dict:
        """The job with what it has done so far (folded from its events)."""
        job = self.get(job_id)
        state = ev.fold(self.read_events(job_id))
        ids = {d: set_id for set_id, _, _, d in self.classifier_sets(job)}
        state["classifiers"] = [{**c, "model": ids.get(str(c.get("dir")))} for c in state["classifiers"]]
        return {**job, **state}

    def active(self) -> dict | None:
        return next((j for j in self.list() if j["status"] in ACTIVE), None)

    def active_label(self) -> dict | None:
        """For the run manager's 409: the fine-tune holding the training slot, if any."""
        job = self.active()
        return {"id": job["id"], "name": f"fine-tune on {job['settings']['task_label']}"} if job else None

    def tasks(self) -> list[dict]:
        """The shipped tasks, asked of the trainer (`--list-tasks` imports no torch); a failure is
        remembered for a while (a page load must not start a process each time)."""
        if self._tasks is None and time.monotonic() >= self._tasks_retry:
            try:
                out = subprocess.run([sys.executable, "-m", "training", "finetune", "--list-tasks"], cwd=REPO,
                                     capture_output=True, text=True, timeout=60, check=True).stdout
                tasks = json.loads(out)
                tasks = tasks.get("tasks", []) if isinstance(tasks, dict) else tasks
                self._tasks = [t for t in tasks if isinstance(t, dict) and isinstance(t.get("name"), str)]
            except (OSError, ValueError, subprocess.SubprocessError) as e:
                log.warning("fine-tune tasks unavailable: %s", e)
                self._tasks_retry = time.monotonic() + 30
        return self._tasks or []

    # ---- starting --------------------------------------------------------------------------------
    def start(self, settings: dict, task_text: str | None) -> dict:
        """settings: model, model_dir, run_dir (snapshots), task (name) or task_label, arms, sizes,
        seeds, steps. Checked by the router; here: the slot, the folder, the process."""
        if not training_available():
            raise ApiError(TRAIN_MISSING, None, status=503)
        try:
            self.jobs_dir.mkdir(parents=True, exist_ok=True)
            fd = self._try_lock()
        except OSError as e:
            raise self._storage_error(e) from None
        if fd is None:
            busy = self.active_label() or self.runs.active()
            what = f"{busy['id']} ({busy['name']})" if busy else "another run"
            raise ApiError(f"the training slot is busy: {what}; cancel it or wait for it to finish", None, status=409)
        try:
            # Holding the slot, no trainer of any job lives: a job (of another worker) that still says
            # running is settled from its facts now, so it never blocks this one nor runs beside it.
            for job in self.list():
                if job["status"] in ACTIVE and job["id"] not in self.procs and not trainer_alive(self.folder(job["id"])):
                    self._settle_one(job["id"])
            if self.active() is not None:
                raise ApiError(f"the training slot is busy: {self.active()['id']}; cancel it or wait for it to "
                               "finish", None, status=409)
            stored = len(self.list())
            if stored >= self.settings.max_runs:
                raise ApiError(f"{stored} fine-tunes are stored, the limit is {self.settings.max_runs}: "
                               "delete one first", None, status=507)
            job_id = time.strftime("f-%Y%m%d-%H%M%S-", time.gmtime()) + secrets.token_hex(2)
            job_dir = self.jobs_dir / job_id
            threads = self.settings.run_threads or max(1, (os.cpu_count() or 2) - 1)
            job = {"id": job_id, "status": "queued", "created": time.time(), "started": None, "ended": None,
                   "reason": None, "settings": {**settings, "threads": threads}, "pid": None, "exit_code": None}
            try:  # the folder is complete (task, then job.json) or not there at all
                job_dir.mkdir(parents=True)
                if task_text is not None:
                    write_text(job_dir / "task.jsonl", task_text)
                write_json(job_dir / "job.json", job)
                trainer_fd = hold_for_child(job_dir)
            except (OSError, UnicodeError) as e:
                shutil.rmtree(job_dir, ignore_errors=True)
                raise self._storage_error(e) from None
            env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONUNBUFFERED": "1",
                   "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
            cmd = self._command(job, task_text is not None)
            threading.Thread(target=watch, args=(self, job, cmd, env, fd, trainer_fd), name=f"ft-{job_id}",
                             daemon=True).start()
            fd = None  # the trainer holds the slot; the watcher closes this copy when it ends
            return job
        finally:
            if fd is not None:
                os.close(fd)

    @staticmethod
    def _storage_error(e: Exception) -> ApiError:
        if is_disk_full(e):
            return ApiError(f"{DISK_FULL}; nothing was started", None, status=507)
        if isinstance(e, UnicodeError):
            return ApiError("task_text must be UTF-8 text", "task_text")
        return ApiError(f"the data folder is not writable ({getattr(e, 'strerror', None) or e}); start the server "
                        "with a writable --data-dir", None, status=503)

    def _command(self, job: dict, uploaded: bool) -> list[str]:
        st, job_dir = job["settings"], self.jobs_dir / job["id"]
        task = str(job_dir / "task.jsonl") if uploaded else st["task"]
        cmd = [sys.executable, "-m", "training", "finetune", "--model", st["model_dir"], "--task", task,
               "--arms", ",".join(st["arms"]), "--sizes", ",".join(str(s) for s in st["sizes"]),
               "--seeds", str(st["seeds"]), "--out", str(job_dir / "out"), "--threads", str(st["threads"])]
        if st.get("steps"):
            cmd += ["--steps", str(st["steps"])]
        if st.get("run_dir"):
            cmd += ["--snapshots", st["run_dir"]]
        nice = shutil.which("nice")
        return [nice, "-n", str(self.settings.run_nice), *cmd] if nice and self.settings.run_nice else cmd

    # ---- cancelling and deleting -----------------------------------------------------------------
    def cancel_or_delete(self, job_id: str) -> dict:
        job = self.get(job_id)
        job_dir = self.jobs_dir / job_id
        if job["status"] in ACTIVE:
            if not self.alive(job_id):
                self.settle()  # its trainer is gone (a server killed mid-job): the facts, not "cancelling"
                job = self.get(job_id)
                if job["status"] not in ACTIVE:
                    return job
            self._cancel(job_id)  # signals only the trainer proven by its lock, never job.json's pid
            return {**job, "status": "cancelling"}
        with self.lock:
            for set_id, _, _, _ in self.classifier_sets(job):
                if self.registry is not None:
                    self.registry.drop(set_id)
                self.registered.pop(set_id, None)
            trash = self.data_dir / f".deleted-{job_id}"
            job_dir.rename(trash)  # gone from listings at once, then removed
            self.unsaved.pop(job_id, None)
        shutil.rmtree(trash, ignore_errors=True)
        return {**job, "status": "deleted"}
