"""Slow clients against a live server: `python -m benchmarks.attacks [--attack slow-body|no-read|slowloris|all]`.

What a careless (or unkind) client on the class network can do with a handful of sockets, and
whether everybody else is still served meanwhile. Each attack runs for --seconds while one normal
client asks POST /api/next-token every 0.2 s; it prints the normal client's answers (200 / 503 /
other, and its worst latency) and how many of the attacking sockets the server had closed by the
end (a slow client must be cut loose after the server's timeouts, not held forever).

- slow-body: 70 connections send a POST whose body arrives one byte every 0.5 s.
- no-read:   64 streams of 1000 characters (GET /api/generate/stream) that never read a byte.
- slowloris: 50 connections send their request headers one line every 2 s, never finishing them.

Starts the server (a subprocess on 127.0.0.1) unless --url is given. Only talks to loopback or
the --url you give it, and stops by itself.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import socket
import tempfile
from pathlib import Path

from .common import NICE, RawConnection, host_port, run_niced, start_server, stop_server
from app.config import REPO

PROMPT = "To be, or not to be, that is the question"


async def normal_client(url: str, stop: asyncio.Event) -> dict:
    """One student asking for the next character every 0.2 s, on a fresh connection each time
    (as a browser does when its previous one was dropped)."""
    out = {"200": 0, "503": 0, "other": 0, "worst_ms": 0.0}
    body = json.dumps({"prompt": PROMPT}).encode()
    while not stop.is_set():
        try:
            conn = await RawConnection(url).open()
            status, ms, _ = await asyncio.wait_for(conn.request("POST", "/api/next-token", body), 30)
            conn.close()
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError):
            status, ms = 0, 30_000.0
        key = str(status) if status in (200, 503) else "other"
        out[key] += 1
        out["worst_ms"] = max(out["worst_ms"], ms)
        await asyncio.sleep(0.2)
    return out


def attacker_socket(host: str, port: int, small_buffer: bool = False) -> socket.socket:
    s = socket.socket()
    if small_buffer:  # a client that does not read: keep what the kernel absorbs for it small
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((host, port))
    s.setblocking(False)
    return s


def closed_by_server(s: socket.socket) -> bool:
    """True once the server closed (FIN or reset) this socket; drains what it sent meanwhile."""
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


async def slow_body(host: str, port: int, n: int, stop: asyncio.Event) -> list[socket.socket]:
    socks = [attacker_socket(host, port) for _ in range(n)]
    body = json.dumps({"prompt": PROMPT}).encode()
    head = (f"POST /api/next-token HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    for s in socks:
        s.send(head)
    i = 0
    while not stop.is_set() and i < len(body) - 1:  # never the last byte
        for s in socks:
            try:
                s.send(body[i:i + 1])
            except OSError:
                pass
        i += 1
        await asyncio.sleep(0.5)
    return socks


async def no_read(host: str, port: int, n: int, stop: asyncio.Event) -> list[socket.socket]:
    socks = [attacker_socket(host, port, small_buffer=True) for _ in range(n)]
    query = f"prompt={PROMPT.replace(' ', '%20').replace(',', '%2C')}&max_new_tokens=1000&seed=1"
    for s in socks:
        s.send(f"GET /api/generate/stream?{query} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    await stop.wait()
    return socks


async def slowloris(host: str, port: int, n: int, stop: asyncio.Event) -> list[socket.socket]:
    socks = [attacker_socket(host, port) for _ in range(n)]
    for s in socks:
        s.send(f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\n".encode())
    i = 0
    while not stop.is_set():
        for s in socks:
            try:
                s.send(f"X-Wait-{i}: {i}\r\n".encode())
            except OSError:
                pass
        i += 1
        await asyncio.sleep(2)
    return socks


ATTACKS = {"slow-body": (slow_body, 70), "no-read": (no_read, 64), "slowloris": (slowloris, 50)}


async def run_attack(url: str, name: str, seconds: float) -> dict:
    host, port = host_port(url)
    attack, n = ATTACKS[name]
    stop = asyncio.Event()
    attacking = asyncio.create_task(attack(host, port, n, stop))
    await asyncio.sleep(1.0)  # let the attack take hold first
    student = asyncio.create_task(normal_client(url, stop))
    await asyncio.sleep(seconds)
    stop.set()
    served = await student
    socks = await attacking
    closed = 0
    for s in socks:
        # the sockets that never read have much to drain before the FIN shows: read it all
        closed += closed_by_server(s)
        s.close()
    return {**served, "attackers": n, "closed_by_server": closed}


def attack_in_process(url: str, name: str, seconds: float) -> dict:
    return asyncio.run(run_attack(url, name, seconds))


def report(name: str, r: dict, seconds: float) -> None:
    print(f"{name:10s} ({r['attackers']} sockets, {seconds:g} s): normal client got {r['200']} x 200, "
          f"{r['503']} x 503, {r['other']} other; worst {r['worst_ms']:.0f} ms; "
          f"attacking sockets closed by the server: {r['closed_by_server']}/{r['attackers']}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.attacks", description=__doc__.split("\n\n")[0])
    p.add_argument("--attack", choices=[*ATTACKS, "all"], default="all")
    p.add_argument("--seconds", type=float, default=20.0, help="how long each attack lasts")
    p.add_argument("--url", help="attack a running server instead of starting one")
    p.add_argument("--models-dir", type=Path, default=REPO / "models")
    args = p.parse_args(argv)
    print(f"the attackers and the normal client run at niceness +{NICE} (below the server)")
    names = list(ATTACKS) if args.attack == "all" else [args.attack]
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:  # a fresh server for each: one attack's leftovers must not blame the next
            proc = None
            url = args.url
            if not url:
                proc, url = start_server(args.models_dir, log=Path(tmp) / "server.log")
            try:
                report(name, run_niced(attack_in_process, url, name, args.seconds), args.seconds)
            finally:
                if proc is not None:
                    stop_server(proc)


if __name__ == "__main__":
    main()
