"""Helpers for the run reliability tests: a real `python -m app` server process on a free port
(its log in a file), a fake trainer that holds a run's lock, a fake run folder."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
TOKEN = "teacher-token-123"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def free_port() -> int:
    """A free loopback port: any, or one of TEST_PORTS ("18100-18199") on a machine whose ports are shared out."""
    span = os.environ.get("TEST_PORTS")
    candidates = range(int(span.split("-")[0]), int(span.split("-")[1]) + 1) if span else [0]
    for port in candidates:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise RuntimeError(f"no free port in TEST_PORTS={span}")


@contextmanager
def server_process(models_dir: Path, data_dir: Path, log: Path, *args: str, env: dict | None = None,
                   port: int | None = None):
    """Yields (url, process) on `port` (a restart on the one before) or a free one. Stops it with
    SIGKILL at the end if it is still running."""
    port = port or free_port()
    cmd = [sys.executable, "-m", "app", "--port", str(port), "--models-dir", str(models_dir), "--data-dir",
           str(data_dir), "--instructor-token", TOKEN, "--log-level", "info", *args]
    environ = {**{k: v for k, v in os.environ.items() if not k.startswith("PLAYGROUND_")},
               "PYTHONPATH": str(REPO), "PLAYGROUND_RUN_TEST_PRESETS": "true", **(env or {})}
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=environ)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/api/health", timeout=2).status_code in (200, 503):
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()


def fake_trainer(run_dir: Path) -> subprocess.Popen:
    """A process that holds the run's trainer lock (as training/live/ does) and sleeps."""
    code = ("import sys, time; from pathlib import Path; from training.run_lock import hold; "
            "hold(Path(sys.argv[1])); print('held', flush=True); time.sleep(120)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(run_dir)], cwd=REPO, stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, start_new_session=True)
    assert proc.stdout.readline().strip() == b"held"
    return proc


def write_run(data: Path, run_id: str, status: str, events: list[dict] = (), **fields) -> Path:
    run_dir = data / "runs" / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    run = {"id": run_id, "name": "Old run", "status": status, "created": time.time(), "started": time.time(),
           "settings": {"families": ["gpt"], "minutes": 1, "preset": None, "seed": 1, "threads": 1},
           "corpus": {}, "progress": {}, "validation": {}, "snapshots": [], "pid": None, **fields}
    (run_dir / "progress.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (run_dir / "run.json").write_text(json.dumps(run))
    return run_dir
