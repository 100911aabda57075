"""HTTP overhead per request: `python -m benchmarks.http_overhead [--json benchmarks/http_overhead.json]`.

What the server costs per request beyond the model, next to what bare FastAPI costs, measured
so that the load generator never shares a core with the server:

1. `taskset -c 0 python -m app` (the playground as a teacher starts it), and `wrk` (C, Debian's
   package) on the other core: `taskset -c 1 wrk -t1 -c8 -d10s -s post.lua URL`, where post.lua
   POSTs the serving benchmark's request body (benchmarks/serving.py: mix_bodies) as JSON (with
   --gzip also `Accept-Encoding: gzip`, as browsers send: then answers of 1000 bytes and more are
   compressed, ~0.5M instructions for next-token's 6 KB). Per endpoint: wrk's rate, and the
   server process's CPU time per request (utime + stime over the run / requests: on a quiet
   machine that is 1 / rate, on a busy one it leaves out the time others took from the core).
2. The same requests' model time, in this process pinned to the server's core: the model work
   the router does (encoding, the onnxruntime run, the numbers of the answer), without HTTP,
   validation or JSON. Overhead = server time - model time.
3. The same wrk run against bare FastAPI + pydantic, one POST route (benchmarks/bare_fastapi.py)
   served by plain uvicorn on the same core: its whole server time is overhead.

Prints the table, the ratio of each overhead to bare FastAPI's and the CPU flags seen; asserts
nothing. Without wrk it says how to install it and exits with status 2.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from .common import cpu, free_port, stop_server
from app.config import REPO, Settings

BARE = "bare FastAPI + pydantic, one POST route"
ENDPOINTS = (("mask-fill", "/api/mask-fill"), ("next-token", "/api/next-token"))
NO_WRK = ("wrk is not installed: this benchmark drives the server with wrk (a C load generator). "
          "Install it with `apt-get install wrk` (Debian/Ubuntu; .ci/run does this) and run it again.")


# ---- wrk
def lua_script(body: bytes, accept_gzip: bool = False) -> str:
    """A wrk script that POSTs `body` as JSON on every request."""
    text = body.decode()
    level = next(n for n in range(1, 10) if "]" + "=" * n + "]" not in text)  # a long bracket the body lacks
    eq = "=" * level
    lines = ['wrk.method = "POST"', f"wrk.body = [{eq}[{text}]{eq}]",
             'wrk.headers["Content-Type"] = "application/json"']
    if accept_gzip:
        lines.append('wrk.headers["Accept-Encoding"] = "gzip, deflate"')
    return "\n".join(lines) + "\n"


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}


def _ms(value: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)([a-z]+)", value).groups()
    return float(number) * _UNITS[unit]


def parse_wrk(text: str) -> dict:
    """wrk's summary: requests, seconds, rate (req/s), mean latency (ms), non-2xx/3xx answers and
    socket errors. ValueError when the text is no wrk summary."""
    done = re.search(r"^\s*(\d+) requests in ([\d.]+)(us|ms|s|m|h),", text, re.M)
    rate = re.search(r"^Requests/sec:\s+([\d.]+)", text, re.M)
    if not done or not rate:
        raise ValueError(f"not a wrk summary:\n{text[-2000:]}")
    latency = re.search(r"^\s*Latency\s+(\S+)", text, re.M)
    non_2xx = re.search(r"^\s*Non-2xx or 3xx responses:\s+(\d+)", text, re.M)
    errors = re.search(r"^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text, re.M)
    return {"requests": int(done.group(1)), "seconds": _ms(done.group(2) + done.group(3)) / 1e3,
            "rate": float(rate.group(1)), "latency_ms": _ms(latency.group(1)) if latency else None,
            "non_2xx": int(non_2xx.group(1)) if non_2xx else 0,
            "socket_errors": sum(map(int, errors.groups())) if errors else 0}


def run_wrk(url: str, script: Path, seconds: float, connections: int, core: int) -> dict:
    cmd = ["taskset", "-c", str(core), "wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s",
           "-s", str(script), url]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    if out.returncode != 0:
        raise RuntimeError(f"wrk failed (exit code {out.returncode}): {out.stderr[-2000:]}")
    return parse_wrk(out.stdout)


# ---- the server process
def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, all its threads (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_pinned(args: list[str], core: int, port: int, ready_path: str, log: Path,
                 wait_s: float = 90.0) -> subprocess.Popen:
    """`taskset -c core python ARGS` (taskset execs: the pid is the server's); returns once
    GET ready_path answers 200."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen(["taskset", "-c", str(core), sys.executable, *args], cwd=str(REPO), env=env,
                            stdout=log.open("w"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited during startup (code {proc.returncode})\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{ready_path}", timeout=1) as r:
                if r.status == 200:
                    return proc
        except OSError:
            pass
        time.sleep(0.2)
    stop_server(proc)
    raise SystemExit(f"the server did not start within {wait_s:g} s\n{log.read_text()[-2000:]}")


def serve_and_load(args: list[str], port: int, ready: str, targets: list[tuple[str, str, bytes]], opts,
                   tmp: Path) -> list[dict]:
    """Start one server, then per (label, path, body): a warm-up, then the measured wrk run."""
    proc = start_pinned(args, opts.server_core, port, ready, tmp / f"server-{port}.log")
    rows = []
    try:
        for label, path, body in targets:
            script = tmp / f"{label.split()[0]}.lua"
            script.write_text(lua_script(body, opts.gzip))
            url = f"http://127.0.0.1:{port}{path}"
            run_wrk(url, script, opts.warmup, opts.connections, opts.client_core)
            before = cpu_seconds(proc.pid)
            got = run_wrk(url, script, opts.seconds, opts.connections, opts.client_core)
            cpu = cpu_seconds(proc.pid) - before
            served = max(1, got["requests"])
            rows.append({"endpoint": label, "path": path, "rate": got["rate"], "requests": got["requests"],
                         "server_ms": 1000 * cpu / served, "wall_ms": 1000 / max(got["rate"], 1e-9),
                         "latency_ms": got["latency_ms"], "non_2xx": got["non_2xx"],
                         "socket_errors": got["socket_errors"]})
    finally:
        stop_server(proc)
    return rows


# ---- model time in process
def model_times(models_dir: Path, bodies: dict[str, dict], calls: int, core: int) -> dict[str, float]:
    """Median CPU ms of each request's model work (what the router does besides HTTP, validation
    and JSON), in this process pinned to `core`."""
    import numpy as np

    from app.main import load_registry
    from app.routers.generation import encode_prompt
    from app.routers.mask_fill import masked_input
    from app.runtime import limit_malloc_arenas
    from app.sampling import sampling_distribution
    from app.contract import FIRST_CHAR
    from app.schemas import MaskFillRequest, NextTokenRequest

    limit_malloc_arenas()  # as the server's lifespan does
    registry = load_registry(Settings(models_dir=models_dir))
    mask_req, next_req = MaskFillRequest(**bodies["mask-fill"]), NextTokenRequest(**bodies["next-token"])

    def mask_fill():
        bert = registry.bert(mask_req.model)
        ids, masks, originals, _ = masked_input(bert.vocab, mask_req.text, mask_req.positions, bert.context)
        bert.fill(ids, masks, mask_req.top_k, originals)

    def next_token():
        gpt = registry.gpt(next_req.model)
        ids, _ = encode_prompt(gpt, next_req)
        logits, _ = gpt.next_logits(ids, next_req.generated)
        sampling_distribution(logits[FIRST_CHAR:], next_req.temperature, next_req.top_k, next_req.top_p)

    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {core})
    try:
        out = {}
        for label, work in (("mask-fill", mask_fill), ("next-token", next_token)):
            for _ in range(10):
                work()
            times = []
            for _ in range(calls):
                t = time.process_time()
                work()
                times.append(time.process_time() - t)
            out[label] = 1000 * float(np.median(times))
        return out
    finally:
        os.sched_setaffinity(0, saved)


# ---- the figures
def measure(opts) -> dict:
    from app.registry import ModelSet, read_meta
    from app.runtime import Runtime
    from .serving import mix_bodies

    models = ModelSet.load(read_meta(opts.models_dir), Runtime(1))
    if models.gpt is None or models.bert is None:
        raise SystemExit(f"cannot benchmark: models missing or broken in {opts.models_dir}: {models.problems}")
    bodies = mix_bodies(models)
    del models
    raw = {label: json.dumps(bodies[label]).encode() for label, _ in ENDPOINTS}
    machine = cpu()  # model, cores, the flags that matter, the load average now
    print(f"CPU: {machine}")
    model_ms = model_times(opts.models_dir, bodies, opts.calls, opts.server_core)
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        ours = serve_and_load(["-m", "app", "--host", "127.0.0.1", "--port", str(port), "--log-level", opts.log_level,
                               "--models-dir", str(opts.models_dir)], port, "/api/health",
                              [(label, path, raw[label]) for label, path in ENDPOINTS], opts, Path(tmp))
        from .bare_fastapi import PATH

        port = free_port()
        bare = serve_and_load(["-m", "uvicorn", "benchmarks.bare_fastapi:app", "--host", "127.0.0.1", "--port",
                               str(port), "--log-level", opts.log_level], port, "/openapi.json",
                              [(BARE, PATH, raw["mask-fill"])], opts, Path(tmp))
    for row in ours:
        row["model_ms"] = model_ms[row["endpoint"]]
        row["overhead_ms"] = row["server_ms"] - row["model_ms"]
    bare[0]["model_ms"], bare[0]["overhead_ms"] = None, bare[0]["server_ms"]
    return {"date": datetime.date.today().isoformat(), "cpu": machine,
            "load_average_after": round(os.getloadavg()[0], 2),
            "settings": {"seconds": opts.seconds, "connections": opts.connections, "accept_gzip": opts.gzip,
                         "log_level": opts.log_level, "server_core": opts.server_core,
                         "client_core": opts.client_core, "model_calls": opts.calls},
            "rows": ours + bare}


def _f(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{x:,.{digits}f}"


def render(data: dict) -> str:
    """The docs/serving.md block (markdown) of a measurement."""
    s = data["settings"]
    bare = data["rows"][-1]["overhead_ms"]
    lines = [f"Measured {data['date']} by `python -m benchmarks.http_overhead` on {data['cpu']} at the start, "
             f"{data['load_average_after']:.1f} at the end: server on core {s['server_core']}, `wrk -t1 "
             f"-c{s['connections']} -d{s['seconds']:g}s` on core {s['client_core']}"
             f"{', Accept-Encoding: gzip' if s['accept_gzip'] else ''}. Server time = the server's CPU time per "
             "request; model time = the same request's model work in process on the server's core.",
             "",
             "| endpoint | served, 1 core (req/s) | model time (ms) | server time per request (ms) | overhead (ms) "
             "| overhead / bare FastAPI's |",
             "|---|---|---|---|---|---|"]
    for row in data["rows"]:
        lines.append(f"| {row['endpoint']} | {_f(row['rate'], 0)} | {_f(row['model_ms'])} | {_f(row['server_ms'])} "
                     f"| {_f(row['overhead_ms'])} | {row['overhead_ms'] / bare:.1f} x |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.http_overhead", description=__doc__.split("\n")[0])
    p.add_argument("--models-dir", type=Path, default=Settings().models_dir)
    p.add_argument("--seconds", type=float, default=10.0, help="wrk's measured run per endpoint (default 10)")
    p.add_argument("--warmup", type=float, default=2.0, help="wrk's warm-up run before it, not counted")
    p.add_argument("--connections", type=int, default=8)
    p.add_argument("--calls", type=int, default=200, help="in-process model calls per endpoint")
    p.add_argument("--server-core", type=int, default=0)
    p.add_argument("--client-core", type=int, default=1)
    p.add_argument("--log-level", default="info", help="uvicorn's, for both servers (default info: as started)")
    p.add_argument("--gzip", action="store_true", help="send Accept-Encoding: gzip (as browsers do)")
    p.add_argument("--json", type=Path, help="also write the figures here (python -m benchmarks.tables http)")
    opts = p.parse_args(argv)
    if shutil.which("wrk") is None:
        print(NO_WRK, file=sys.stderr)
        return 2
    if shutil.which("taskset") is None or len(os.sched_getaffinity(0)) < 2:
        print("this benchmark pins the server and wrk to two different cores: it needs taskset and 2 cores",
              file=sys.stderr)
        return 2
    data = measure(opts)
    print(render(data))
    if any(r["non_2xx"] or r["socket_errors"] for r in data["rows"]):
        print("warning: some answers were not 2xx or had socket errors:",
              {r["endpoint"]: (r["non_2xx"], r["socket_errors"]) for r in data["rows"]})
    if opts.json:
        opts.json.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        print(f"figures written to {opts.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
