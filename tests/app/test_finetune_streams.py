"""Issue 24, what a client can do to a fine-tune's public face, against a real server process: close
its event stream early (40 times), send a Last-Event-ID that is no line number (a superscript two,
5,000 digits) to fine-tune and run streams; read the public job JSON. No traceback in the log, the
history served from the start, no server path and no process id in what anyone can read. And the
tail itself: a line written just before the job ends is still sent."""
from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import httpx
import pytest

from app.finetunes.stream import key, line
from app.jobs import stream as jobs_stream
from run_servers import fake_trainer, server_process, write_run
from tests.conftest import SHIPPED_MODELS

JOB = "f-20260101-000000-abcd"
RUN = "r-20260101-000000-1234"
BAD_IDS = ["²", "9" * 5000, "-3", "12abc", "٣"]


def plant_job(data: Path) -> Path:
    job_dir = data / "finetunes" / JOB
    job_dir.mkdir(parents=True)
    settings = {"model": "shakespeare", "model_name": "Shakespeare", "model_dir": str(SHIPPED_MODELS), "task": "toy",
                "task_label": "toy", "arms": ["full"], "sizes": [8], "seeds": 2, "steps": None, "snapshots": True,
                "run": RUN, "run_dir": str(data / "runs" / RUN), "threads": 1}
    job = {"id": JOB, "status": "running", "created": time.time(), "started": time.time(), "ended": None,
           "reason": None, "settings": settings, "pid": 4242, "exit_code": None}
    (job_dir / "job.json").write_text(json.dumps(job))
    lines = [{"event": "start", "task": "toy", "kind": "sequence", "labels": ["a", "b"], "arms": ["full"],
              "sizes": [8], "seeds": 2000, "n_train": 20, "n_test": 10, "jobs": 2000}]
    lines += [{"event": "result", "arm": "full", "size": 8, "seed": k, "accuracy": 0.5, "n_test": 10, "seconds": 0.1}
              for k in range(2000)]
    (job_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    return job_dir


@pytest.mark.slow
def test_streams_closed_early_or_resumed_from_nonsense_log_no_traceback_and_nothing_private_shows(tmp_path):
    data, log = tmp_path / "data", tmp_path / "log"
    job_dir = plant_job(data)
    run_dir = write_run(data, RUN, "running", [{"event": "progress", "t": i, "family": "gpt", "step": i, "loss": 3.0}
                                               for i in range(50)])
    trainers = [fake_trainer(job_dir), fake_trainer(run_dir)]  # both hold their trainer locks: alive
    try:
        with server_process(SHIPPED_MODELS, data, log) as (url, _):
            for _ in range(40):
                with httpx.stream("GET", f"{url}/api/finetunes/{JOB}/events", timeout=30) as s:
                    next(s.iter_bytes())  # then the client goes away
            for bad in BAD_IDS:
                for path in (f"/api/finetunes/{JOB}/events", f"/api/runs/{RUN}/events"):
                    with httpx.stream("GET", url + path, headers={"Last-Event-ID": bad.encode()}, timeout=30) as s:
                        assert s.status_code == 200, (path, bad)
                        head = b""
                        for chunk in s.iter_bytes():
                            head += chunk
                            if b"\nid: 1\n" in head or head.startswith(b"id: 1\n") or b"id: 1\n" in head:
                                break
                        assert b"id: 1\n" in head, (path, bad)  # ignored: the history from its first line
            shown = [httpx.get(f"{url}/api/finetunes").text, httpx.get(f"{url}/api/finetunes/{JOB}").text]
            with httpx.stream("GET", f"{url}/api/finetunes/{JOB}/events", headers={"Last-Event-ID": "2001"},
                              timeout=30) as s:
                for chunk in s.iter_text():
                    if "event: status" in chunk:
                        shown.append(chunk)
                        break
            time.sleep(1.5)
            assert httpx.get(f"{url}/api/health").status_code == 200
    finally:
        for t in trainers:
            t.kill()
            t.wait()
    for text in shown:
        assert str(SHIPPED_MODELS) not in text and str(data) not in text and '"pid"' not in text, text[:600]
        assert '"/' not in text, text[:600]
    detail = json.loads(shown[1])
    assert detail["settings"]["model_dir"] == "models" and detail["settings"]["run_dir"] == f"data/runs/{RUN}"
    text = log.read_text(errors="replace")
    assert "Traceback" not in text and "Exception in ASGI" not in text, text[-3000:]


class Client:
    headers: dict = {}

    async def is_disconnected(self) -> bool:
        return False


def test_a_line_written_just_before_the_job_ends_is_streamed(tmp_path, monkeypatch):
    """The race a stream had: it read the file (nothing new), then the trainer wrote its last line and
    ended, then the stream saw the ended status and stopped without sending that line."""
    monkeypatch.setattr(jobs_stream, "POLL_S", 0.0)
    events = tmp_path / JOB / "events.jsonl"
    events.parent.mkdir()
    events.write_text(json.dumps({"event": "start", "jobs": 2}) + "\n")
    looks = []

    def status() -> dict:
        looks.append(1)
        if len(looks) < 2:
            return {"status": "running", "done": 0}
        if len(looks) == 2:  # between the stream's read and this look: the last line, then the end
            with open(events, "a") as f:
                f.write(json.dumps({"event": "result", "arm": "full", "size": 8, "seed": 0, "accuracy": 0.6}) + "\n")
            return {"status": "cancelled", "done": 1}
        return {"status": "cancelled", "done": 1}

    async def collect() -> bytes:
        parts = jobs_stream.tail(events, Client(), line, status, key, threading.Event())
        return b"".join([part async for part in parts])

    sent = asyncio.run(collect()).decode()
    assert sent.count("event: start") == 1 and sent.count("event: result") == 1
    assert '"status": "cancelled"' in sent
