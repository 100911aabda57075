"""A class watching one training run's event stream (prints figures; a benchmark, not a timed test):

    python -m benchmarks.run_watchers                    # 200 watchers of a 790 KB history, own server
    python -m benchmarks.run_watchers --watchers 5 --history-kb 60     # a quick look (what the test runs)
    python -m benchmarks.run_watchers --running          # the run is still training (a fake trainer)

Issue 17, items 7 and 6. A data folder gets one run whose progress.jsonl holds about --history-kb
of history (what a 30-minute run writes: built from the real event lines of the example run
shipped in models/runs/, repeated with its times and steps moved on, as training/live writes
them). A `python -m app` server is started on it (benchmarks/common.start_server, log level info).
Then:

- memory: the server's RSS before, its peak while --watchers clients open
  `GET /api/runs/{id}/events` at once and read it (raw HTTP/1.1 on asyncio sockets), and after
  they finish (target: peak growth < 50 MB);
- time: for each watcher, request sent -> the last history event read (target: all within 10 s);
- log: --closers clients open the stream and leave after its first history event (every other one with a
  TCP reset); the bytes the server's log grew by and its 'Traceback' lines (target: a line or so
  per request, no traceback);
- the CPU (model, cores, flags, load average).

The clients run in a niced subprocess (benchmarks/common.run_niced) so that on two cores they do
not take the server's CPU; the RSS is sampled every 20 ms from here."""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from app.config import REPO
from app.contract import PROGRESS_FILE
from benchmarks.common import cpu, host_port, percentile, rss_mb, run_niced, server_pids, start_server, stop_server

EXAMPLE = REPO / "models" / "runs" / "example-shakespeare-3min"  # a real 3-minute run's events
RUN_ID = "r-20260101-000000-beef"
TOKEN = "run-watchers-teacher-token"
MINUTES = 30.0
MARK = b"\nid: "  # each history event starts with its id line (the status event has none)


# --- the run folder ------------------------------------------------------------------------------

def history_lines(target_bytes: int, running: bool) -> list[str]:
    """progress.jsonl lines of a MINUTES-long run, about target_bytes in all: the example run's
    start and models lines, its training events (eval, progress, sample, snapshot) repeated with
    t, elapsed_s and steps moved on, then (finished) its exporting, final snapshot and finished."""
    events = [json.loads(line) for line in (EXAMPLE / PROGRESS_FILE).read_text(encoding="utf-8").splitlines()]
    first_end = next(i for i, e in enumerate(events) if e["event"] == "exporting")
    head, body, tail = events[:2], events[2:first_end], events[first_end:]
    period = max(e.get("elapsed_s", 0) for e in body) or 180.0
    top: dict[str, int] = {}
    for e in body:
        if e["event"] in ("progress", "eval"):
            top[e["family"]] = max(top.get(e["family"], 0), e["step"])
    head[0] = {**head[0], "minutes": MINUTES}
    head[1] = {**head[1], "budget_s": MINUTES * 60}

    def moved(e: dict, k: int) -> dict:
        e = dict(e)
        if not k:
            return e
        e["t"] = round(e["t"] + k * period, 3)
        if "elapsed_s" in e:
            e["elapsed_s"] = round(e["elapsed_s"] + k * period, 2)
            if "remaining_s" in e:
                e["remaining_s"] = round(max(0.0, MINUTES * 60 - e["elapsed_s"]), 2)
                e["fraction"] = round(min(1.0, e["elapsed_s"] / (MINUTES * 60)), 4)
        if "family" in e and "step" in e:
            e["step"] += k * top.get(e["family"], 0)
            if e.get("tokens"):
                e["tokens"] = e["tokens"] * (k + 1)
        if isinstance(e.get("steps"), dict):
            e["steps"] = {f: s + k * top.get(f, 0) for f, s in e["steps"].items()}
            e["step"] = sum(e["steps"].values())
        return e

    dump = lambda e: json.dumps(e, ensure_ascii=False) + "\n"  # as training/live's Events.emit writes
    lines = [dump(e) for e in head]
    k = 0
    end = [] if running else [dump(moved(e, 0)) for e in tail]
    size = sum(len(s.encode()) for s in lines + end)
    while size < target_bytes:
        for e in body:
            if k and e["event"] == "snapshot":  # a run has its few snapshots once, not every period
                continue
            line = dump(moved(e, k))
            lines.append(line)
            size += len(line.encode())
            if size >= target_bytes:
                break
        k += 1
    if not running:
        shift = max(0, k - 1)
        lines += [dump(moved(e, shift)) for e in tail]
    return lines


def make_run(data_dir: Path, target_bytes: int, running: bool) -> tuple[Path, int, int]:
    """DATA/runs/RUN_ID/{run.json, progress.jsonl}; (folder, history bytes, history events)."""
    run_dir = data_dir / "runs" / RUN_ID
    run_dir.mkdir(parents=True)
    lines = history_lines(target_bytes, running)
    (run_dir / PROGRESS_FILE).write_text("".join(lines), encoding="utf-8")
    run = json.loads((EXAMPLE / "run.json").read_text(encoding="utf-8"))
    run.update(id=RUN_ID, name="A 30-minute run", created=time.time() - MINUTES * 60, started=time.time() - MINUTES * 60,
               pid=None, exit_code=None, settings={**run.get("settings", {}), "minutes": MINUTES}, snapshots=[])
    run.pop("shipped", None)
    if running:
        run.update(status="running", ended=None, metrics=None)
    else:
        run.update(status="finished", ended=time.time())
    (run_dir / "run.json").write_text(json.dumps(run), encoding="utf-8")
    return run_dir, (run_dir / PROGRESS_FILE).stat().st_size, len(lines)


def fake_trainer(run_dir: Path) -> subprocess.Popen:
    """A process that holds the run's trainer lock (as training/live does) and sleeps: the server
    sees the run alive and keeps its streams open."""
    code = ("import sys, time; from pathlib import Path; from training.run_lock import hold; "
            "hold(Path(sys.argv[1])); print('held', flush=True); time.sleep(3600)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(run_dir)], cwd=str(REPO), stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, start_new_session=True)
    if proc.stdout.readline().strip() != b"held":
        raise SystemExit("the fake trainer could not take the run's lock")
    return proc


# --- the clients (run in the niced subprocess) ---------------------------------------------------

async def open_stream(url: str, path: str):
    host, port = host_port(url)
    reader, writer = await asyncio.open_connection(host, port, limit=1 << 20)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n\r\n".encode())
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    chunked = False
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
    if status != 200 or not chunked:
        writer.close()
        raise RuntimeError(f"GET {path}: {status}{'' if chunked else ' (not a stream)'}")
    return reader, writer


async def chunks(reader):
    """The body's chunks, to the last one."""
    while True:
        line = await reader.readline()
        if not line:
            raise ConnectionResetError("the server closed the connection mid-stream")
        if not (size := int(line.split(b";")[0], 16)):
            return
        yield await reader.readexactly(size)
        await reader.readline()


async def watcher(url: str, path: str, events: int, timeout: float) -> dict:
    """Read the stream until its last history event (id == events); seconds from the request."""
    t0 = time.monotonic()
    seen, carry, received, writer = 0, b"\n", 0, None  # the body starts at a line start
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await open_stream(url, path)
            async for piece in chunks(reader):
                received += len(piece)
                buf = carry + piece
                seen += buf.count(MARK)
                carry = buf[-(len(MARK) - 1):]
                if seen >= events:
                    return {"s": time.monotonic() - t0, "events": seen, "bytes": received}
        return {"s": None, "events": seen, "bytes": received, "error": "the stream ended early"}
    except (TimeoutError, asyncio.TimeoutError):
        return {"s": None, "events": seen, "bytes": received, "error": f"not complete after {timeout:g} s"}
    except (OSError, RuntimeError, ValueError, asyncio.IncompleteReadError) as e:
        return {"s": None, "events": seen, "bytes": received, "error": f"{type(e).__name__}: {e}"}
    finally:
        if writer is not None:
            writer.close()


async def _watch(url: str, run_id: str, n: int, events: int, timeout: float) -> dict:
    path = f"/api/runs/{run_id}/events"
    t0 = time.monotonic()
    results = list(await asyncio.gather(*(watcher(url, path, events, timeout) for _ in range(n))))
    return {"watchers": results, "span_s": time.monotonic() - t0}


def watch(url: str, run_id: str, n: int, events: int, timeout: float) -> dict:
    """Every watcher's result, and the seconds from the first request to the last watcher's end."""
    return asyncio.run(_watch(url, run_id, n, events, timeout))


async def closer(url: str, path: str, reset: bool) -> str | None:
    """Open the stream, read until its first history event, leave (a TCP reset when `reset`)."""
    writer = None
    try:
        async with asyncio.timeout(30):
            reader, writer = await open_stream(url, path)
            async for piece in chunks(reader):
                if MARK in piece:  # history is flowing: the server is mid-way through it
                    break
        return None
    except Exception as e:  # noqa: BLE001 - counted, not raised
        return f"{type(e).__name__}: {e}"
    finally:
        if writer is not None:
            if reset:
                sock = writer.get_extra_info("socket")
                if sock is not None:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.close()


async def _close_early(url: str, run_id: str, n: int) -> list[str | None]:
    path = f"/api/runs/{run_id}/events"
    return list(await asyncio.gather(*(closer(url, path, i % 2 == 1) for i in range(n))))


def close_early(url: str, run_id: str, n: int) -> list[str | None]:
    return asyncio.run(_close_early(url, run_id, n))


# --- the measurement -----------------------------------------------------------------------------

def server_rss(root: int) -> float:
    """MB: the server process and its workers' (one process with --workers 1)."""
    return sum(rss_mb(pid) or 0.0 for pid in {root, *server_pids(root)})


class Sampler(threading.Thread):
    """The server's RSS every `every` seconds until stopped; its peak."""

    def __init__(self, pid: int, every: float = 0.02):
        super().__init__(daemon=True)
        self.pid, self.every, self.peak, self.done = pid, every, 0.0, threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.peak = max(self.peak, server_rss(self.pid))
            self.done.wait(self.every)

    def stop(self) -> float:
        self.done.set()
        self.join()
        self.peak = max(self.peak, server_rss(self.pid))
        return self.peak


def log_tail(log: Path, start: int) -> bytes:
    with open(log, "rb") as f:
        f.seek(start)
        return f.read()


def run(watchers: int = 200, history_kb: float = 790.0, closers: int = 200, running: bool = False,
        timeout: float = 60.0, nice: bool = True) -> dict:
    data_dir = Path(tempfile.mkdtemp(prefix="playground-run-watchers-"))
    log = Path(tempfile.mkdtemp(prefix="playground-run-watchers-log-")) / "server.log"
    run_dir, size, events = make_run(data_dir, int(history_kb * 1000), running)
    trainer = fake_trainer(run_dir) if running else None
    load = (lambda f, *a: run_niced(f, *a)) if nice else (lambda f, *a: f(*a))
    r = {"watchers": watchers, "history_bytes": size, "history_events": events, "running": running,
         "closers": closers, "niced": nice}
    try:
        proc, url = start_server(REPO / "models", ["--data-dir", str(data_dir), "--instructor-token", TOKEN,
                                                   "--log-level", "info"], log=log)
        try:
            warm = watch(url, RUN_ID, 1, events, timeout)["watchers"][0]  # the first stream's imports are not the watchers'
            if warm["s"] is None:
                raise SystemExit(f"a single watcher could not read the history: {warm.get('error')}")
            time.sleep(1.0)
            r["rss_before_mb"] = server_rss(proc.pid)
            sampler = Sampler(proc.pid)
            sampler.start()
            answer = load(watch, url, RUN_ID, watchers, events, timeout)
            r["rss_peak_mb"] = sampler.stop()
            results, r["span_s"] = answer["watchers"], answer["span_s"]
            time.sleep(2.0)  # streams end (a running run's at its next poll), memory is handed back
            r["rss_after_mb"] = server_rss(proc.pid)
            times = [w["s"] for w in results if w["s"] is not None]
            r["completed"] = len(times)
            r["p50_s"], r["max_s"] = percentile(times, 50), (max(times) if times else float("nan"))
            r["errors"] = sorted({w["error"] for w in results if w.get("error")})

            start = log.stat().st_size
            failed = [e for e in load(close_early, url, RUN_ID, closers) if e]
            time.sleep(2.0)  # whatever the server logs about them is written by now
            text = log_tail(log, start)
            r["log_bytes"] = len(text)
            r["log_lines"] = text.count(b"\n")
            r["tracebacks"] = text.count(b"Traceback")
            r["asgi_errors"] = text.count(b"Exception in ASGI application")
            r["closer_errors"] = sorted(set(failed))
            r["rss_end_mb"] = server_rss(proc.pid)
        finally:
            stop_server(proc)
    finally:
        if trainer is not None:
            trainer.kill()
            trainer.wait()
        shutil.rmtree(data_dir, ignore_errors=True)
        shutil.rmtree(log.parent, ignore_errors=True)
    r["cpu"] = cpu()
    return r


def report(r: dict) -> str:
    growth = r["rss_peak_mb"] - r["rss_before_mb"]
    lines = [
        f"run watchers: {r['watchers']} watchers of a {'running' if r['running'] else 'finished'} run, "
        f"load generator {'niced' if r['niced'] else 'at the server priority'}",
        f"  history: {r['history_bytes'] / 1000:.0f} KB, {r['history_events']} events",
        f"  server RSS: before {r['rss_before_mb']:.0f} MB, peak {r['rss_peak_mb']:.0f} MB, "
        f"growth {growth:.1f} MB (target < 50 MB), after {r['rss_after_mb']:.0f} MB",
        f"  completed the history: {r['completed']}/{r['watchers']} (all ended {r['span_s']:.1f} s after the first request)",
        f"  time to the full history: p50 {r['p50_s']:.2f} s, max {r['max_s']:.2f} s (target: all within 10 s)",
        f"  early closes: {r['closers']} clients left after the first event (half with a reset): server log "
        f"+{r['log_bytes']} bytes, {r['log_lines']} lines ({r['log_bytes'] / max(1, r['closers']):.0f} bytes per "
        f"client), {r['tracebacks']} 'Traceback', {r['asgi_errors']} 'Exception in ASGI application'; "
        f"RSS then {r['rss_end_mb']:.0f} MB",
        f"  cpu: {r['cpu']}",
    ]
    lines += [f"  watcher error: {e}" for e in r["errors"]]
    lines += [f"  closer error: {e}" for e in r["closer_errors"]]
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run_watchers", description=__doc__.split("\n")[0])
    p.add_argument("--watchers", type=int, default=200, help="clients reading the whole history at once")
    p.add_argument("--history-kb", type=float, default=790.0, help="size of the run's progress.jsonl (30 minutes: ~790)")
    p.add_argument("--closers", type=int, default=200, help="clients that leave a stream after its first history event")
    p.add_argument("--running", action="store_true", help="the run is still training (a fake trainer holds its lock)")
    p.add_argument("--timeout", type=float, default=60.0, help="a watcher gives up after this many seconds")
    p.add_argument("--no-nice", action="store_true", help="run the clients at the server's priority, in this process")
    p.add_argument("--json", action="store_true", help="also print the raw figures as one JSON line")
    a = p.parse_args(argv)
    r = run(a.watchers, a.history_kb, a.closers, a.running, a.timeout, not a.no_nice)
    print(report(r), flush=True)
    if a.json:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
