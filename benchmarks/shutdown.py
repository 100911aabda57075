"""How long a real server takes to exit on SIGTERM mid-lesson (issue 34, issue 53; prints figures, a
benchmark, not a timed test):

    python -m benchmarks.shutdown                    # 12 event streams, 8 busy clients, 3 rounds
    python -m benchmarks.shutdown --busy 0           # the streams alone (tests/app/test_class_shutdown.py's case)

Each round starts `python -m app` on loopback with a fresh data folder, starts a class, opens
`--streams` event streams (phones following the class, each from its own loopback address, and
the projector) and `--busy` clients that keep asking (a phone's state read and a Mask-Fill
request in turn, back to back), then sends SIGTERM and times how long the process takes to exit.
The streams must end cleanly (their last chunk); the busy clients' requests in flight finish.

Figures: per round, seconds to exit and the exit status; the machine's load average before each
round (the time depends on it: the server must be scheduled to finish what is in flight)."""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import httpx

from app.config import REPO
from benchmarks.common import cpu, start_server

TOKEN = "shutdown-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def open_stream(url: str, path: str, headers: dict, address: str) -> socket.socket:
    """An event stream on a raw socket from `address`, read until its first event; left open."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=60, source_address=(address, 0))
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n{head}\r\n".encode())
    got = b""
    while b"event: state" not in got:
        chunk = sock.recv(65536)
        if not chunk:
            raise SystemExit(f"an event stream closed before its first event: {got[-300:]!r}")
        got += chunk
    return sock


def ended_cleanly(sock: socket.socket, limit_s: float = 60) -> bool:
    """Read until the server closes the stream: True when it ended with the chunked body's last chunk."""
    rest, deadline = b"", time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except OSError:
            return False
        if not chunk:
            return rest.endswith(b"0\r\n\r\n")
        rest += chunk
    return False


def busy(url: str, code: str, cookie: str, address: str, stop: threading.Event, done: list) -> None:
    """Back-to-back requests until the server goes: a phone's state read, then a Mask-Fill."""
    transport = httpx.HTTPTransport(local_address=address)
    with httpx.Client(base_url=url, transport=transport, timeout=30, cookies={f"pp_class_{code}": cookie}) as c:
        while not stop.is_set():
            try:
                c.get(f"/api/sessions/{code}")
                c.post("/api/mask-fill", json={"text": "To be, or not to [MASK] be", "top_k": 5})
                done[0] += 2
            except httpx.HTTPError:
                return  # the server closed: this client is done


def one_round(streams: int, clients: int, port: int | None) -> dict:
    data = Path(tempfile.mkdtemp(prefix="shutdown-"))
    load = os.getloadavg()[0]
    proc, url = start_server(REPO / "models", ["--data-dir", str(data), "--instructor-token", TOKEN], port=port)
    stop, done, threads = threading.Event(), [0], []
    try:
        teacher = httpx.Client(base_url=url, headers=AUTH, timeout=60)
        code = teacher.post("/api/sessions", json={"nsp_count": 2, "max_participants": 1000}).json()["code"]
        cookies = []
        for k in range(max(streams - 1, clients)):
            phone = httpx.Client(transport=httpx.HTTPTransport(local_address=f"127.0.6.{k + 2}"), timeout=60)
            r = phone.post(f"{url}/api/sessions/{code}/join", json={"nickname": f"P{k}"})
            if r.status_code != 200:
                raise SystemExit(f"phone {k} could not join: {r.status_code} {r.text[:200]}")
            cookies.append(phone.cookies[f"pp_class_{code}"])
        teacher.put(f"/api/sessions/{code}/state", json={"page": "nsp"})
        socks = [open_stream(url, f"/api/sessions/{code}/events", {"Cookie": f"pp_class_{code}={cookies[k]}"},
                             f"127.0.6.{k + 2}") for k in range(streams - 1)]
        socks.append(open_stream(url, f"/api/sessions/{code}/events", AUTH, "127.0.0.1"))  # the projector
        for k in range(clients):
            t = threading.Thread(target=busy, args=(url, code, cookies[k], f"127.0.6.{k + 2}", stop, done), daemon=True)
            t.start()
            threads.append(t)
        deadline = time.monotonic() + 60
        while clients and done[0] < 2 * clients and time.monotonic() < deadline:
            time.sleep(0.1)  # every busy client has been answered once (the first Mask-Fill warms the model)
        before = done[0]
        time.sleep(2.0)  # then in full swing
        served = done[0] - before
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        clean = [ended_cleanly(s) for s in socks]
        rc = proc.wait(timeout=120)
        took = time.monotonic() - t0
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(data, ignore_errors=True)
    return {"seconds": took, "rc": rc, "clean": sum(clean), "streams": len(clean), "load": load,
            "requests_before": served}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=12, help="event streams open (default 12)")
    parser.add_argument("--busy", type=int, default=8, help="clients sending requests back to back (default 8)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=None, help="the server's port (default: a free one)")
    args = parser.parse_args(argv)
    print(f"SIGTERM mid-lesson: {args.streams} event streams open, {args.busy} busy clients", flush=True)
    for k in range(args.rounds):
        r = one_round(args.streams, args.busy, args.port)
        print(f"  round {k + 1}: exited in {r['seconds']:.2f} s (rc {r['rc']}), {r['clean']}/{r['streams']} streams "
              f"ended cleanly, {r['requests_before']} busy requests answered in the 2 s before; load average "
              f"{r['load']:.1f} before the round", flush=True)
    print(f"  {cpu()}")


if __name__ == "__main__":
    main()
