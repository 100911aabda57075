"""The one lifecycle of a job started from the browser: a pretraining run (app/runs/manager.py)
or a fine-tune (app/finetunes/jobs.py), each a spec on this class (app/jobs/kernel.py).

- states: queued -> running -> one of TERMINAL; ACTIVE (queued, running) holds the slot;
- the slot: one job trains at a time across every worker and both kinds, held by an flock on
  DATA_DIR/train.lock that the starting worker takes and hands to the trainer process (pass_fds),
  so it is free exactly when the trainer is gone (however it ends, the server killed -9 included);
- liveness: the trainer's lock on its own folder (JOB_DIR/trainer.lock, app/jobs/liveness.py),
  never a PID from a file: a job that says queued/running while nobody holds its trainer lock and
  no worker watches it is settled from the facts (`settle`), by any worker, at start-up and on
  every scan;
- signals only to a trainer proven to be that trainer (this worker's own child not yet reaped, or
  the lock holder whose PID start time matches), never to a PID read from a job's record;
- the record (run.json / job.json) written aside and renamed into place; a write that fails (a
  full disk) keeps the fields in memory, shown as if stored and written again by the next scan,
  so a job can always end even when its disk cannot say so yet."""
from __future__ import annotations

import fcntl
import json
import logging
import os
import signal
import threading
import time
from pathlib import Path

from .liveness import start_time, trainer_alive, trainer_pid
from .store import read_json, write_json

log = logging.getLogger("app")
ACTIVE = ("queued", "running")
TERMINAL = ("finished", "cancelled", "failed", "interrupted")


class Lifecycle:
    """Slot, record, settling and signals. A kind of job provides `folder(job_id)`, `RECORD`,
    `list()`, `_settle_one(job_id)` and `_clean_orphans()` (app/jobs/kernel.py does)."""
    RECORD = "run.json"
    data_dir: Path
    lock: threading.RLock
    procs: dict
    unsaved: dict[str, dict]
    stopping: threading.Event

    def folder(self, job_id: str) -> Path:
        raise NotImplementedError

    def list(self) -> list[dict]:
        raise NotImplementedError

    # ---- the slot --------------------------------------------------------------------------------
    def _try_lock(self) -> int | None:
        """The training slot (DATA_DIR/train.lock), or None while a job holds it. OSError: no data folder."""
        fd = os.open(self.data_dir / "train.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError:
            os.close(fd)
            return None

    # ---- the record ------------------------------------------------------------------------------
    def _update(self, job_id: str, **fields) -> dict:
        """Merge fields into the record; when the write fails (a full disk) they are kept in memory,
        shown as if stored, and written by a later scan."""
        with self.lock:
            path = self.folder(job_id) / self.RECORD
            job = {**read_json(path), **self.unsaved.pop(job_id, {}), **fields}
            try:
                write_json(path, job)
            except OSError as e:
                self.unsaved[job_id] = dict(job)
                log.warning("%s: state kept in memory, not stored (%s)", job_id, e.strerror)
            return job

    # ---- settling --------------------------------------------------------------------------------
    def alive(self, job_id: str) -> bool:
        """Is the job's trainer alive: this worker's child not yet reaped, or its lock held?"""
        proc = self.procs.get(job_id)
        return (proc is not None and proc.poll() is None) or trainer_alive(self.folder(job_id))

    def _stale(self) -> list[dict]:
        """Jobs that say queued/running while no trainer lives for them and no worker starts one here."""
        return [j for j in self.list() if j["status"] in ACTIVE and not j.get("shipped")
                and j["id"] not in self.procs and not trainer_alive(self.folder(j["id"]))]

    def settle(self, clean: bool = False) -> None:
        """Jobs that say queued/running while no trainer holds their lock and no worker is starting
        or watching one (the slot free) end as their trainer's last words say. With clean: what a
        crash left half-made goes (`_clean_orphans`)."""
        with self.lock:
            for job_id, fields in list(self.unsaved.items()):
                if self.folder(job_id).is_dir():
                    self._update(job_id, **fields)
                else:
                    self.unsaved.pop(job_id, None)
            stale = self._stale()
            if not stale and not clean:
                return
            fd = self._try_lock()
            if fd is None:  # a worker is starting or watching a job: it settles its own
                return
            try:
                for job in stale:
                    if not trainer_alive(self.folder(job["id"])):
                        self._settle_one(job["id"])
                if clean:
                    self._clean_orphans()
            finally:
                os.close(fd)

    def _settle_one(self, job_id: str) -> None:
        raise NotImplementedError

    def _clean_orphans(self) -> None:
        pass

    # ---- signals ---------------------------------------------------------------------------------
    def _signal(self, job_id: str, sig: int) -> bool:
        """Signal the job's trainer and its helpers (own session), only when it is proven to be
        that trainer: this worker's own child not yet reaped, or the lock holder with the same
        PID start time. True when a signal was sent."""
        proc = self.procs.get(job_id)
        pid = proc.pid if proc is not None and proc.poll() is None else trainer_pid(self.folder(job_id))
        if pid is None:
            return False
        try:
            os.killpg(pid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def _kill_run_later(self, job_id: str, grace_s: float = 3.0) -> None:
        """Cancel frees the CPU at once: a trainer that has not stopped after the grace is killed."""
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if not self._signal(job_id, 0):
                return
            time.sleep(0.1)
        self._signal(job_id, signal.SIGKILL)

    def _cancel(self, job_id: str) -> bool:
        """Ask the job's trainer to stop (TERM, then KILL after a grace); False when none is alive."""
        try:
            (self.folder(job_id) / "cancel-requested").touch()
        except OSError:
            pass  # a full disk: the signal below still stops it
        if self._signal(job_id, signal.SIGTERM):
            threading.Thread(target=self._kill_run_later, args=(job_id,), daemon=True).start()
            return True
        return False

    def kill_all(self, grace_s: float = 3.0) -> None:
        """Server shutdown: the jobs this process started stop now (their watchers mark them
        interrupted; if this process is gone first, the next start settles them)."""
        self.stopping.set()
        for job_id in list(self.procs):
            self._signal(job_id, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while self.procs and time.monotonic() < deadline:
            time.sleep(0.05)
        for job_id in list(self.procs):
            self._signal(job_id, signal.SIGKILL)


def hold_for_child(folder: Path) -> int:
    """A trainer lock on `folder`, taken by the server for a child that does not take its own: the
    fd is handed to the child (pass_fds) and closed here once it runs, so the child alone holds it;
    `name_holder` writes the child's PID and start time into it."""
    fd = os.open(Path(folder) / "trainer.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise
    return fd


def name_holder(folder: Path, pid: int) -> None:
    """Write the child's PID and start time into the trainer lock it was handed."""
    try:
        fd = os.open(Path(folder) / "trainer.lock", os.O_WRONLY)
    except OSError:
        return
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": pid, "start": start_time(pid)}).encode(), 0)
    except OSError:  # a full disk: the lock still proves liveness; nobody may signal the child
        pass
    finally:
        os.close(fd)
