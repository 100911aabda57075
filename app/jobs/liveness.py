"""Is a job's trainer alive, and which process is it? Proven by the lock the trainer holds on
JOB_DIR/trainer.lock (training/run_lock.py takes it, or the server hands it to the trainer), never assumed from a PID: a dead server's
PID, or a trainer's PID reused by an unrelated process, must never be signalled.

- alive: the lock is held (a probe cannot take it). The kernel drops it when the trainer ends.
- pid: the PID the holder wrote into the file, and only while the lock is held and the PID's
  start time (/proc/PID/stat) is the one the holder wrote: that PID is the trainer."""
from __future__ import annotations

import errno
import fcntl
import json
import os
from pathlib import Path

LOCK_NAME = "trainer.lock"  # = training/run_lock.py LOCK_NAME (app/ does not import training/)


def start_time(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def trainer_alive(run_dir: Path) -> bool:
    try:
        fd = os.open(Path(run_dir) / LOCK_NAME, os.O_RDONLY)
    except OSError:
        return False  # never taken: no trainer ever started here
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # released at once by the close below
        return False
    except OSError as e:
        return e.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    finally:
        os.close(fd)


def trainer_pid(run_dir: Path) -> int | None:
    """The trainer's PID, proven (lock held, same start time), or None."""
    try:
        holder = json.loads((Path(run_dir) / LOCK_NAME).read_text())
        pid, started = int(holder["pid"]), holder["start"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if started is None or not trainer_alive(run_dir) or start_time(pid) != started:
        return None
    return pid
