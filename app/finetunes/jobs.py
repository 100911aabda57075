"""Fine-tune jobs: `python -m training finetune` as a niced subprocess, its events, its classifiers.

A job shares the training slot with pretraining runs (app/runs/): the same flock on
DATA_DIR/train.lock, handed to the child process too, so the slot stays taken exactly as long as
the fine-tune lives. Its folder:

    DATA_DIR/finetunes/<id>/job.json      settings and status (written aside, renamed into place)
                            task.jsonl    an uploaded task file
                            events.jsonl  every JSON line the trainer printed, appended as it comes
                            stderr.log    the trainer's own messages (the reason when it dies)
                            out/          the trainer's --out: classifiers/<arm>/ model sets

What the job has done (results, summary, classifiers) is folded from events.jsonl
(app/finetunes/events.py), never kept twice; after a restart a job whose slot is free while it
says running is marked interrupted. Finished classifiers join the registry as model sets of kind
"classifier" (id `<job>.<arm>`), on every worker (the periodic rescan of app/routers/runs.py).
"""
from __future__ import annotations

import json
import logging
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..errors import ApiError
from ..runs.rules import TRAIN_MISSING, training_available
from ..runs.manager import REPO, RunManager
from ..runs.store import read_json, write_json
from . import events as ev

log = logging.getLogger("app")
JOB_ID = re.compile(r"^f-[0-9]{8}-[0-9]{6}-[0-9a-f]{4}$")
ACTIVE = ("queued", "running")
TERMINAL = ("finished", "cancelled", "failed", "interrupted")
INTERRUPTED = "the server stopped while this fine-tune was running; its finished classifiers stay usable"


class FinetuneManager:
    def __init__(self, settings, registry, runs: RunManager):
        self.settings, self.registry, self.runs = settings, registry, runs
        self.data_dir = Path(settings.data_dir)
        self.jobs_dir = self.data_dir / "finetunes"
        self.lock = threading.RLock()
        self.procs: dict[str, subprocess.Popen] = {}
        self.registered: dict[str, Path] = {}
        self.stopping = False
        self._tasks: list[dict] | None = None
        self._tasks_retry = 0.0

    # ---- startup and the registry ----------------------------------------------------------------
    def startup(self) -> None:
        if self.jobs_dir.is_dir():
            fd = self._try_lock()
            if fd is not None:  # nobody trains: a job that says it runs was cut short
                try:
                    for job in self.list():
                        if job["status"] in ACTIVE:
                            self._update(job["id"], status="interrupted", ended=time.time(), reason=INTERRUPTED)
                finally:
                    os.close(fd)
        self.sync_registry()

    def _try_lock(self) -> int | None:
        try:
            return self.runs._try_lock()
        except OSError:
            return None

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
                        jobs.append(read_json(d / "job.json"))
                    except (OSError, ValueError):
                        continue  # being created or deleted
        return sorted(jobs, key=lambda j: j.get("created", 0), reverse=True)

    def get(self, job_id: str) -> dict:
        if JOB_ID.match(job_id):
            try:
                return read_json(self.jobs_dir / job_id / "job.json")
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

    def _update(self, job_id: str, **fields) -> dict:
        with self.lock:
            path = self.jobs_dir / job_id / "job.json"
            job = {**read_json(path), **fields}
            write_json(path, job)
            return job

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
            fd = self.runs._try_lock()
        except OSError as e:
            raise ApiError(f"the data folder {self.data_dir} is not writable ({e.strerror}); start the server "
                           f"with a writable --data-dir", None, status=503) from None
        if fd is None:
            busy = self.active_label() or self.runs.active()
            what = f"{busy['id']} ({busy['name']})" if busy else "another run"
            raise ApiError(f"the training slot is busy: {what}; cancel it or wait for it to finish", None, status=409)
        try:
            if len(self.list()) >= self.settings.max_runs:
                raise ApiError(f"{len(self.list())} fine-tunes are stored, the limit is {self.settings.max_runs}: "
                               "delete one first", None, status=507)
            job_id = time.strftime("f-%Y%m%d-%H%M%S-", time.gmtime()) + secrets.token_hex(2)
            job_dir = self.jobs_dir / job_id
            try:
                job_dir.mkdir(parents=True)
                if task_text is not None:
                    (job_dir / "task.jsonl").write_text(task_text, encoding="utf-8")
            except OSError as e:
                shutil.rmtree(job_dir, ignore_errors=True)
                raise ApiError(f"the data folder {self.data_dir} is not writable ({e.strerror})", None,
                               status=503) from None
            threads = self.settings.run_threads or max(1, (os.cpu_count() or 2) - 1)
            job = {"id": job_id, "status": "queued", "created": time.time(), "started": None, "ended": None,
                   "reason": None, "settings": {**settings, "threads": threads}, "pid": None, "exit_code": None}
            write_json(job_dir / "job.json", job)
            cmd = self._command(job, task_text is not None)
            threading.Thread(target=self._watch, args=(job, cmd, fd), name=f"ft-{job_id}", daemon=True).start()
            fd = None  # the watcher releases it when the process ends
            return job
        finally:
            if fd is not None:
                os.close(fd)

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

    # ---- watching (a thread of the worker that started it) ---------------------------------------
    def _watch(self, job: dict, cmd: list[str], lock_fd: int) -> None:
        job_id, job_dir = job["id"], self.jobs_dir / job["id"]
        env = {**os.environ, "OMP_NUM_THREADS": str(job["settings"]["threads"]), "PYTHONUNBUFFERED": "1",
               "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
        last: dict = {}
        try:
            with open(job_dir / "stderr.log", "wb") as err:
                # the child holds the slot's lock too: it is free only once the fine-tune is gone
                proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                        env=env, start_new_session=True, text=True, encoding="utf-8",
                                        errors="replace", pass_fds=(lock_fd,))
            self.procs[job_id] = proc
            self._update(job_id, status="running", started=time.time(), pid=proc.pid)
            with open(self.events_path(job_id), "a", encoding="utf-8") as log_file:
                for line in proc.stdout:
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue
                    if not isinstance(event, dict):
                        continue
                    log_file.write(json.dumps(event, ensure_ascii=False) + "\n")
                    log_file.flush()
                    last = event
                    if event.get("event") == "classifier":
                        self.sync_registry()  # playable at once here; other workers on their scan
            code = proc.wait()
            os.close(lock_fd)  # the slot is free before the job says it ended
            lock_fd = None
            self._finish(job_id, code, last)
        except Exception as e:  # noqa: BLE001 - the job fails, the server keeps serving
            log.exception("fine-tune %s", job_id)
            self._update(job_id, status="failed", ended=time.time(), reason=f"the fine-tune could not be watched: {e}")
        finally:
            self.procs.pop(job_id, None)
            if lock_fd is not None:
                os.close(lock_fd)
            self.sync_registry()

    def _finish(self, job_id: str, code: int, last: dict) -> None:
        job_dir = self.jobs_dir / job_id
        if code == 0 and last.get("event") == "summary":
            status, reason = "finished", None
        elif self.stopping:
            status, reason = "interrupted", INTERRUPTED
        elif (job_dir / "cancel-requested").exists():
            status, reason = "cancelled", "cancelled by the instructor"
        elif last.get("event") == "error":
            status, reason = "failed", str(last.get("message"))[:500]
        else:
            how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
            try:
                lines = (job_dir / "stderr.log").read_text(encoding="utf-8", errors="replace").strip().splitlines()
            except OSError:
                lines = []
            status, reason = "failed", f"the fine-tune process {how}" + (f": {lines[-1][:300]}" if lines else "")
        self._update(job_id, status=status, reason=reason, ended=time.time(), exit_code=code)

    # ---- cancelling and deleting -----------------------------------------------------------------
    def cancel_or_delete(self, job_id: str) -> dict:
        job = self.get(job_id)
        job_dir = self.jobs_dir / job_id
        if job["status"] in ACTIVE:
            (job_dir / "cancel-requested").touch()
            if job.get("pid"):
                try:
                    os.killpg(job["pid"], signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass
                threading.Thread(target=RunManager._kill_later, args=(job["pid"],), daemon=True).start()
            return {**job, "status": "cancelling"}
        with self.lock:
            for set_id, _, _, _ in self.classifier_sets(job):
                if self.registry is not None:
                    self.registry.drop(set_id)
                self.registered.pop(set_id, None)
            trash = self.data_dir / f".deleted-{job_id}"
            job_dir.rename(trash)  # gone from listings at once, then removed
        shutil.rmtree(trash, ignore_errors=True)
        return {**job, "status": "deleted"}

    def kill_all(self) -> None:
        self.stopping = True
        for proc in list(self.procs.values()):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
