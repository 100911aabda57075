"""onnxruntime plumbing: sessions, the shared CPU arena, threads, and the gate that decides which
model run goes next. Nothing here knows what the models compute."""
from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections import deque
from pathlib import Path

import onnxruntime as ort

_ARENA_LOCK = threading.Lock()
_arena: bool | None = None  # None: not tried yet


def shared_cpu_arena() -> bool:
    """Register one CPU arena for all sessions of this process (True if it is there). Per-session
    arenas each keep their own peak, and grow in powers of two (a 5 MB need can reserve 8 MB)."""
    global _arena
    with _ARENA_LOCK:
        if _arena is None:
            try:
                info = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
                # max_mem 0 = no limit; extend strategy 1 = kSameAsRequested; defaults for the rest.
                ort.create_and_register_allocator(info, ort.OrtArenaCfg(0, 1, -1, -1))
                _arena = True
            except Exception:  # noqa: BLE001 - an onnxruntime without it: per-session arenas
                _arena = False
        return _arena


def make_session(path: Path, threads: int) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.intra_op_num_threads = max(1, threads)
    so.inter_op_num_threads = 1
    # Spinning worker threads would steal the few cores from other requests' threads.
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if shared_cpu_arena():
        so.add_session_config_entry("session.use_env_allocators", "1")
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


class FairGate:
    """A counting semaphore that admits waiting threads strictly in arrival order.

    threading.Semaphore lets a newly arriving thread take a freed slot before the woken waiter,
    which then queues again at the back: under load that shows up as a long latency tail. Here
    a freed slot is handed straight to the oldest waiter. One gate is shared by every model of
    every set in the process: it is the number of cores' worth of model runs at once."""

    def __init__(self, slots: int):
        self._lock = threading.Lock()
        self._free = slots
        self._waiters: deque[threading.Lock] = deque()

    def __enter__(self) -> None:
        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                return
            baton = threading.Lock()
            baton.acquire()
            self._waiters.append(baton)
        baton.acquire()  # released by __exit__ of the run that hands us its slot

    def __exit__(self, *exc) -> None:
        with self._lock:
            if self._waiters:
                self._waiters.popleft().release()
            else:
                self._free += 1


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_parallel_runs(threads: int) -> int:
    """As many concurrent model runs as there are cores for them (each uses `threads`)."""
    return max(1, cores() // max(1, threads))


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Cap glibc's malloc arenas. glibc gives threads their own arenas (up to 8 per core), each
    keeping the memory it freed; the model requests run on up to ~70 pool threads, so a busy
    server's memory would grow with thread count, not with load. No-op off glibc."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-8, arenas)  # -8 = M_ARENA_MAX
        # A fixed mmap threshold (-3 = M_MMAP_THRESHOLD): blocks of 128 KiB and more (a generation's
        # KV-cache buffers, 196 KiB each) are mapped and unmapped on their own. glibc would otherwise
        # raise the threshold after the first such free and serve them from the heap, which keeps
        # them: RSS 123 -> 175 MB after bursts of 32 streams, 120 -> 130 MB with this.
        libc.mallopt(-3, 128 * 1024)
    except (OSError, AttributeError):
        pass


class Runtime:
    """What every loaded model shares: intra-op threads and the gate."""

    def __init__(self, threads: int = 1, parallel_runs: int = 0):
        self.threads = max(1, threads)
        self.gate = FairGate(parallel_runs or default_parallel_runs(self.threads))

    def session(self, path: Path) -> ort.InferenceSession:
        return make_session(path, self.threads)
