"""What the benchmarks share (benchmarks/serving.py, loadtest.py, run_watchers.py, class_load.py ...): a server subprocess on loopback, its memory,
and a raw HTTP/1.1 client.

The raw client (asyncio streams, keep-alive, no client library) keeps the stopwatch next to the
socket: httpx's pool bookkeeping grows with the requests in flight and, on two cores, would take
CPU from the server it measures. It speaks only what the benchmarks need: one request at a time
per connection, Content-Length bodies, and chunked (streamed) answers read to the end.
"""
from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from app.config import REPO


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(models_dir: Path, args: list[str] = (), log: Path | None = None,
                 wait_s: float = 60.0, port: int | None = None) -> tuple[subprocess.Popen, str]:
    """`python -m app` on a free 127.0.0.1 port, or `port` when given (extra CLI `args`); returns
    (process, base URL) once /api/health answers 200."""
    port = port or free_port()
    cmd = [sys.executable, "-m", "app", "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
           "--models-dir", str(models_dir), *args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    out = log.open("w") if log else None
    proc = subprocess.Popen(cmd, cwd=str(REPO), env=env, stdout=out, stderr=subprocess.STDOUT if out else None)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text()[-2000:] if log else ""
            raise SystemExit(f"the server exited during startup (code {proc.returncode})\n{tail}")
        try:
            if httpx.get(url + "/api/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    stop_server(proc)
    raise SystemExit(f"the server did not start within {wait_s:g} s")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


NICE = 10  # the load generator's niceness increment over the server's


def run_niced(func, *args):
    """func(*args) in a fresh Python process NICE steps below this one; its JSON-able result.

    The load generator must not compete with the server on equal terms: on two cores its own CPU
    use would show up as server latency. The server is started from this process first (a child
    inherits niceness, and an unprivileged process can never get it back). A plain subprocess, not
    multiprocessing: nothing of the caller's __main__ is imported again."""
    code = ("import importlib, json, sys; m, f, a = json.load(sys.stdin); "
            "r = getattr(importlib.import_module(m), f)(*a); sys.stdout.write('\\n' + json.dumps(r))")
    module = func.__module__
    if module == "__main__":  # run as `python -m app.x`: the child imports it by its real name
        module = sys.modules["__main__"].__spec__.name
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(["nice", "-n", str(NICE), sys.executable, "-c", code], cwd=str(REPO), env=env,
                          input=json.dumps([module, func.__name__, list(args)]),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"the load process failed (exit code {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.rsplit("\n", 1)[-1])


def rss_mb(pid: int | None) -> float | None:
    """VmRSS of a process in MB, or None when it cannot be read (not Linux, process gone)."""
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def server_pids(root: int) -> list[int]:
    """The server process and, with --workers > 1, its worker children (uvicorn's supervisor
    holds no models, so each worker is reported)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == root:
            children.append(int(stat.parent.name))
    return children or [root]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (nan for no values)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def host_port(url: str) -> tuple[str, int]:
    host, _, port = url.removeprefix("http://").split("/")[0].rpartition(":")
    return host, int(port)


class RawConnection:
    """One keep-alive HTTP/1.1 connection on asyncio streams."""

    def __init__(self, url: str, local_address: str | None = None, cookie: str | None = None):
        self.host, self.port = host_port(url)
        self.local = (local_address, 0) if local_address else None  # the client's own loopback address
        self.cookie = f"Cookie: {cookie}\r\n" if cookie else ""  # a joined student's (benchmarks/write_loop.py)

    async def open(self) -> "RawConnection":
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port, local_addr=self.local)
        return self

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, float, bytes]:
        """(status, milliseconds until the whole answer was read, the answer's body)."""
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n{self.cookie}\r\n").encode()
        start = time.perf_counter()
        self.writer.write(head + body)
        await self.writer.drain()
        line = await self.reader.readline()
        if not line:  # the server had closed this idle keep-alive connection
            raise ConnectionResetError("connection closed before an answer")
        status = int(line.split()[1])
        length, chunked = 0, False
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding" and "chunked" in value.lower():
                chunked = True
        if chunked:  # a stream: read it to its last chunk
            parts = []
            while size := int((await self.reader.readline()).split(b";")[0], 16):
                parts.append(await self.reader.readexactly(size))
                await self.reader.readline()
            await self.reader.readline()
            data = b"".join(parts)
        else:
            data = await self.reader.readexactly(length)
        return status, (time.perf_counter() - start) * 1000, data

    def close(self) -> None:
        self.writer.close()


def cpu() -> str:
    """The CPU a benchmark saw: model, cores, the flags that matter for these models, the load."""
    name, flags = "unknown CPU", set()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name") and name == "unknown CPU":
                name = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    wanted = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{name}, {os.cpu_count()} cores, flags {' '.join(f for f in wanted if f in flags) or 'none of note'}, "
            f"load average {load:.1f}")
