"""Watching a run: a thread of the worker that started it reads the trainer's JSON lines into
run.json, and the verdict that ends a run, from facts (the trainer's last words, its exit, a
cancel request, a full disk), used by the watcher and by `RunManager.settle` alike."""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import time
from pathlib import Path

from ..contract import FAMILIES
from .store import DISK_FULL, low_space

log = logging.getLogger("app")
STOPPED = "the server stopped while this run was training; its finished snapshots stay usable"
ORPHANED = ("the server stopped (or was killed) while this run was training; its finished snapshots "
            "stay usable")
NO_SPACE = ("No space left on device", "[Errno 28]", "ENOSPC")


def stderr_tail(run_dir: Path) -> str:
    try:
        lines = (run_dir / "stderr.log").read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


def verdict(m, run_id: str, last: dict, code: int | None) -> dict:
    """How a run ended. code None: its watcher is gone (settled by a scan or a restart)."""
    run_dir = m.runs_dir / run_id
    kind, tail = last.get("event"), stderr_tail(run_dir)
    said = f"{last.get('message') or ''} {tail}"
    fields = {"ended": time.time(), **({"exit_code": code} if code is not None else {})}
    if kind == "finished" and code in (0, None):
        return {**fields, "status": "finished", "reason": None,
                **{k: last[k] for k in ("metrics", "steps", "commands", "validation_loss") if k in last}}
    if (run_dir / "cancel-requested").exists():
        return {**fields, "status": "cancelled", "reason": "cancelled by the instructor"}
    if run_id in m.unsaved or low_space(m.data_dir) or any(s in said for s in NO_SPACE):
        return {**fields, "status": "failed", "reason": DISK_FULL}
    if m.stopping.is_set():
        return {**fields, "status": "interrupted", "reason": STOPPED}
    if kind == "error":
        return {**fields, "status": "failed", "reason": last.get("message")}
    if code is None:
        return {**fields, "status": "interrupted", "reason": ORPHANED}
    how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
    return {**fields, "status": "failed", "reason": f"the training process {how}" + (f": {tail}" if tail else "")}


def watch(m, run: dict, cmd: list[str], lock_fd: int) -> None:
    run_id, run_dir = run["id"], m.runs_dir / run["id"]
    env = {**os.environ, "OMP_NUM_THREADS": str(run["settings"]["threads"]), "PYTHONUNBUFFERED": "1"}
    last: dict = {}
    code = None
    try:
        with open(run_dir / "stderr.log", "wb") as err:
            proc = subprocess.Popen(cmd, cwd=m.REPO, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                    env=env, start_new_session=True, text=True, encoding="utf-8", errors="replace")
        m.procs[run_id] = proc
        m._update(run_id, status="running", started=time.time(), pid=proc.pid)
        for line in proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                if event.get("event") in ("finished", "cancelled", "error"):
                    last = event
                try:
                    on_event(m, run_id, event)
                except Exception:  # noqa: BLE001 - one odd line does not stop the watching
                    log.warning("run %s: event %r not recorded", run_id, event.get("event"), exc_info=True)
        code = proc.wait()
        m._update(run_id, **verdict(m, run_id, last, code))
    except Exception as e:  # noqa: BLE001 - the run fails, the server keeps serving
        log.exception("run %s", run_id)
        if code is None and run_id in m.procs:
            m._signal(run_id, signal.SIGKILL)
        reason = DISK_FULL if isinstance(e, OSError) and e.errno == 28 else f"the run could not be watched: {e}"
        try:
            m._update(run_id, status="failed", ended=time.time(), reason=reason)
        except Exception:  # noqa: BLE001 - run.json unreadable: the next scan settles it
            log.exception("run %s", run_id)
    finally:
        m.procs.pop(run_id, None)
        os.close(lock_fd)
        m._clean_partial(run_dir)
        m.sync_registry()


def on_event(m, run_id: str, e: dict) -> None:
    kind = e.get("event")
    if kind == "models":
        m._update(run_id, models=e.get("models"), commands=e.get("commands"),
                  corpus={**m.get(run_id)["corpus"], **(e.get("corpus") or {})})
    elif kind == "progress":
        run = m.get(run_id)
        m._update(run_id, progress={**run["progress"], e["family"]: {
            k: e.get(k) for k in ("step", "loss", "tokens_per_s", "elapsed_s", "remaining_s", "fraction")}})
    elif kind == "eval":
        run = m.get(run_id)
        m._update(run_id, validation={**run["validation"], e["family"]: {"step": e["step"], "loss": e.get("val_loss")}})
    elif kind == "sample":
        m._update(run_id, sample={k: e.get(k) for k in ("step", *FAMILIES)})
    elif kind == "snapshot":
        run = m.get(run_id)
        entry = {"name": e["name"], "step": e["step"], "steps": e.get("steps"), "final": e.get("final", False),
                 "id": run_id if e.get("final") else f"{run_id}@{e['step']}"}
        m._update(run_id, snapshots=[*run["snapshots"], entry], **({"steps": e.get("steps")} if e.get("final") else {}))
        m.sync_registry()  # playable at once on this worker; the others pick it up on their scan
    elif kind == "finished":
        m._update(run_id, metrics=e.get("metrics"), validation_loss=e.get("validation_loss"),
                  steps=e.get("steps"), commands=e.get("commands"), playable_after_s=e.get("playable_after_s"))
