"""Watching a fine-tune, and the verdict that ends one, from facts (the trainer's last words, its
exit, a cancel request, a full disk), used by the watcher and by `settle` (a restarted server, or
a scan of any worker) alike. The twin of app/runs/watch.py, on the shared lifecycle
(app/runs/lifecycle.py).

The trainer's standard output goes straight into the job's events.jsonl (a file, not a pipe to
the server), so a trainer outlives a server killed -9 without losing a line, and the next server
reads the same file: its lock (JOB_DIR/trainer.lock, handed to it at start) says whether it still
trains."""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import time
from pathlib import Path

from ..runs.lifecycle import name_holder
from ..runs.store import DISK_FULL, is_disk_full, low_space
from ..runs.watch import NO_SPACE, stderr_tail

log = logging.getLogger("app")
INTERRUPTED = "the server stopped while this fine-tune was running; its finished classifiers stay usable"
ORPHANED = ("the fine-tune's process ended while no server watched it (the server was stopped or killed); "
            "its finished classifiers stay usable")
POLL_S = 0.25


def last_words(events: Path) -> dict:
    """The trainer's last `summary` or `error` line (from the file's tail), or {}."""
    try:
        with open(events, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 262144))
            lines = f.read().splitlines()
    except OSError:
        return {}
    for raw in reversed(lines):
        try:
            event = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(event, dict) and event.get("event") in ("summary", "error"):
            return event
    return {}


def verdict(m, job_id: str, code: int | None) -> dict:
    """How a fine-tune ended. code None: no watcher saw it end (settled by a scan or a restart)."""
    job_dir = m.folder(job_id)
    last, tail = last_words(m.events_path(job_id)), stderr_tail(job_dir)
    said = f"{last.get('message') or ''} {tail}"
    fields = {"ended": time.time(), **({"exit_code": code} if code is not None else {})}
    if last.get("event") == "summary" and code in (0, None):
        return {**fields, "status": "finished", "reason": None}
    if (job_dir / "cancel-requested").exists():
        return {**fields, "status": "cancelled", "reason": "cancelled by the instructor"}
    if job_id in m.unsaved or low_space(m.data_dir) or any(s in said for s in NO_SPACE):
        return {**fields, "status": "failed", "reason": DISK_FULL}
    if m.stopping.is_set():
        return {**fields, "status": "interrupted", "reason": INTERRUPTED}
    if last.get("event") == "error":
        return {**fields, "status": "failed", "reason": str(last.get("message"))[:500]}
    if code is None:
        return {**fields, "status": "interrupted", "reason": ORPHANED}
    how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
    return {**fields, "status": "failed", "reason": f"the fine-tune process {how}" + (f": {tail}" if tail else "")}


def watch(m, job: dict, cmd: list[str], env: dict, slot_fd: int, trainer_fd: int) -> None:
    """A thread of the worker that started the job: runs the trainer (it alone holds the slot and its
    trainer lock once started), serves each classifier as it is written, and settles the job."""
    job_id, job_dir = job["id"], m.folder(job["id"])
    code = None
    try:
        try:
            with open(job_dir / "stderr.log", "wb") as err, open(m.events_path(job_id), "ab") as out:
                proc = subprocess.Popen(cmd, cwd=m.REPO, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env,
                                        start_new_session=True, pass_fds=(slot_fd, trainer_fd))
        finally:
            os.close(trainer_fd)  # the trainer holds its lock from here (a failed start: nobody does)
        m.procs[job_id] = proc
        name_holder_fd(job_dir, proc.pid)
        m._update(job_id, status="running", started=time.time(), pid=proc.pid)
        seen = 0
        while proc.poll() is None:
            time.sleep(POLL_S)
            seen = _serve_new_classifiers(m, job_id, seen)
        code = proc.returncode
        os.close(slot_fd)  # the slot is free before the job says it ended
        slot_fd = None
        m._update(job_id, **verdict(m, job_id, code))
    except Exception as e:  # noqa: BLE001 - the job fails, the server keeps serving
        if is_disk_full(e):
            log.warning("fine-tune %s: %s", job_id, DISK_FULL)
        else:
            log.exception("fine-tune %s", job_id)
        if code is None and job_id in m.procs:
            m._signal(job_id, signal.SIGKILL)
        reason = DISK_FULL if is_disk_full(e) else f"the fine-tune could not be watched: {e}"
        try:
            m._update(job_id, status="failed", ended=time.time(), reason=reason)
        except Exception:  # noqa: BLE001 - job.json unreadable: the next scan settles it
            log.warning("fine-tune %s: its record could not be read", job_id)
    finally:
        m.procs.pop(job_id, None)
        if slot_fd is not None:
            os.close(slot_fd)
        m.sync_registry()


def name_holder_fd(job_dir: Path, pid: int) -> None:
    """Write the trainer's PID and start time into its lock file (the lock itself is the child's)."""
    try:
        fd = os.open(job_dir / "trainer.lock", os.O_WRONLY)
    except OSError:
        return
    try:
        name_holder(fd, pid)
    finally:
        os.close(fd)


def _serve_new_classifiers(m, job_id: str, seen: int) -> int:
    """Classifiers written since the last look join this worker's registry at once (others: on their scan)."""
    try:
        size = m.events_path(job_id).stat().st_size
    except OSError:
        return seen
    if size != seen and m.read_events(job_id, kinds=("classifier",)):
        m.sync_registry()
    return size
