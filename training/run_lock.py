"""The trainer's lock on its run folder: RUN_DIR/trainer.lock, an flock held for the trainer's
whole life. The kernel drops it when the process ends, however it ends (exit, crash, kill -9), so
a server proves that a run is alive by failing to take the lock, never by a PID that may have
been reused. The file also names the holder: its PID and the PID's start time (/proc), so that a
server signals that PID only while the lock is held and the start time still matches.

No torch here: taken before the heavy imports. app/jobs/liveness.py reads the same file (the
name and fields are restated there; tests/training/test_run_lock.py holds the two together)."""
from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

LOCK_NAME = "trainer.lock"


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])  # the name (field 2) may hold spaces


def hold(run_dir: Path, wait_s: float = 5.0) -> int:
    """Take the run folder's lock for this process's life; the fd is kept open (never closed).
    Raises BlockingIOError when another trainer holds it (a server only probes it for an instant)."""
    fd = os.open(Path(run_dir) / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                raise
            time.sleep(0.05)
    try:
        holder = json.dumps({"pid": os.getpid(), "start": start_time(os.getpid())}).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder, 0)
    except OSError:  # a full disk: the lock still proves liveness; nobody may signal this process
        pass
    return fd
