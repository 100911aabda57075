"""The one watcher of a job, and the verdict that ends one from facts (the trainer's last words, its
exit, a cancel request, a full disk), used by the watcher and by `settle` (a restarted server, or
a scan of any worker) alike.

The watcher is a thread of the worker that started the job. It runs the trainer (which alone holds
the slot, and its trainer lock, once started), folds each event into the job's state as the
trainer writes it (the job's event file, app/jobs/eventlog.py: a file, not a pipe to the server,
so no line is lost when the server dies and a restarted server reads the same lines), serves
each model set as it lands, frees the slot and writes the verdict."""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import time
from pathlib import Path

from .lifecycle import name_holder
from .store import DISK_FULL, is_disk_full, low_space

log = logging.getLogger("app")
NO_SPACE = ("No space left on device", "[Errno 28]", "ENOSPC")
POLL_S = 0.25  # how often the watcher looks for new events


def stderr_tail(job_dir: Path) -> str:
    try:
        lines = (job_dir / "stderr.log").read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


def last_words(events: Path, endings: tuple[str, ...]) -> dict:
    """The trainer's last line of one of the `endings` kinds (from the file's tail), or {}."""
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
        if isinstance(event, dict) and event.get("event") in endings:
            return event
    return {}


def verdict(m, job_id: str, code: int | None) -> dict:
    """How a job ended. code None: no watcher saw it end (settled by a scan or a restart)."""
    job_dir = m.folder(job_id)
    last, tail = last_words(m.events_path(job_id), m.ENDINGS), stderr_tail(job_dir)
    said = f"{last.get('message') or ''} {tail}"
    fields = {"ended": time.time(), **({"exit_code": code} if code is not None else {})}
    if last.get("event") == m.FINISHED and code in (0, None):
        return {**fields, "status": "finished", "reason": None, **m.finished_fields(last)}
    if (job_dir / "cancel-requested").exists():
        return {**fields, "status": "cancelled", "reason": "cancelled by the instructor"}
    if job_id in m.unsaved or low_space(m.data_dir) or any(s in said for s in NO_SPACE):
        return {**fields, "status": "failed", "reason": DISK_FULL}
    if m.stopping.is_set():
        return {**fields, "status": "interrupted", "reason": m.WORDS["stopped"]}
    if last.get("event") == "error":
        return {**fields, "status": "failed", "reason": str(last.get("message"))[:500]}
    if code is None:
        return {**fields, "status": "interrupted", "reason": m.WORDS["orphaned"]}
    how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
    return {**fields, "status": "failed", "reason": f"the {m.WORDS['process']} {how}" + (f": {tail}" if tail else "")}


def watch(m, job: dict, cmd: list[str], slot_fd: int, trainer_fd: int | None) -> None:
    """Run the job's trainer to its end (see the module's docstring)."""
    job_id, job_dir = job["id"], m.folder(job["id"])
    threads = str(job["settings"]["threads"])
    env = {**os.environ, "OMP_NUM_THREADS": threads, "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(m.REPO), os.environ.get("PYTHONPATH")) if p)}
    code = None
    try:
        try:
            # The trainer's stdout is the event file, or (a trainer that writes its own) nowhere.
            out_path = m.events_path(job_id) if m.STDOUT_IS_EVENTS else os.devnull
            with open(job_dir / "stderr.log", "wb") as err, open(out_path, "ab") as out:
                fds = (slot_fd,) if trainer_fd is None else (slot_fd, trainer_fd)
                proc = subprocess.Popen(cmd, cwd=m.REPO, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env,
                                        start_new_session=True, pass_fds=fds)
        finally:
            if trainer_fd is not None:
                os.close(trainer_fd)  # the trainer holds its lock from here (a failed start: nobody does)
        m.procs[job_id] = proc
        if trainer_fd is not None:
            name_holder(job_dir, proc.pid)
        m._update(job_id, status="running", started=time.time(), pid=proc.pid)
        served = 0
        while True:
            ended = proc.poll() is not None
            served = fold(m, job_id, served)
            if ended:
                break
            time.sleep(POLL_S)
        code = proc.returncode
        os.close(slot_fd)  # the slot is free before the job says it ended
        slot_fd = None
        m._update(job_id, **verdict(m, job_id, code))
    except Exception as e:  # noqa: BLE001 - the job fails, the server keeps serving
        if is_disk_full(e):
            log.warning("%s %s: %s", m.NOUN, job_id, DISK_FULL)
        else:
            log.exception("%s %s", m.NOUN, job_id)
        if code is None and job_id in m.procs:
            m._signal(job_id, signal.SIGKILL)
        reason = DISK_FULL if is_disk_full(e) else f"the {m.NOUN} could not be watched: {e}"
        try:
            m._update(job_id, status="failed", ended=time.time(), reason=reason)
        except Exception:  # noqa: BLE001 - the record unreadable: the next scan settles it
            log.warning("%s %s: its record could not be read", m.NOUN, job_id)
    finally:
        m.procs.pop(job_id, None)
        if slot_fd is not None:
            os.close(slot_fd)
        m._clean_partial(job_dir)
        m.sync_registry()


def fold(m, job_id: str, served: int) -> int:
    """Fold the job's new events into its state; a model set that landed since the last look joins
    this worker's registry at once (the others pick it up on their scan)."""
    events = m.events(job_id)
    for event in events.new():
        try:
            m.on_event(job_id, event)
        except Exception:  # noqa: BLE001 - one odd line does not stop the watching
            log.warning("%s %s: event %r not recorded", m.NOUN, job_id, event.get("event"), exc_info=True)
    landed = events.counts[m.LANDED]
    if landed != served:
        m.sync_registry()
    return landed
