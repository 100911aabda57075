"""The class-load benchmark's read loop (issue 43; `python -m benchmarks.class_load --read-loop N
[--stream-flood M]`): one address that is no student's (127.0.0.2; the students are on 127.0.0.3,
127.0.0.4, ..., the teacher on 127.0.0.1) loops GET /api/sessions/CODE on N keep-alive connections
through the answer phase, after opening M event streams, in a process of its own so that its CPU does
not show up as latency in the load's event loop. It counts its 200s and 429s."""
from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections import Counter

from app.config import REPO
from benchmarks.common import RawConnection

SPEND_LIMIT_S = 60.0  # the burst is spent long before this on any machine that serves a class
READER = "127.0.0.2"  # the read loop's address: no student's (they start at 127.0.0.3), not the teacher's


async def _read_loop(url: str, path: str, address: str, connections: int, streams: int) -> dict:
    """From `address`: open `streams` event streams of `path` (one at a time, each held open), then
    loop GET `path` on `connections` connections until this process's stdin closes. Prints "ready"
    once the streams are settled and the connections open; returns the counts."""
    held: list[RawConnection] = []
    stream_codes: Counter = Counter()
    first = time.monotonic()  # before this address's first request: its budget's whole span is inside
    for _ in range(streams):
        c = await RawConnection(url, address).open()
        c.writer.write(f"GET {path}/events HTTP/1.1\r\nHost: {c.host}:{c.port}\r\n\r\n".encode())
        line = await c.reader.readline()
        status = int(line.split()[1]) if line else 0
        stream_codes[status] += 1
        if status == 200:
            held.append(c)  # held open, never read: a few small events fit the socket buffers
        else:
            c.close()
    conns = [await RawConnection(url, address).open() for _ in range(connections)]
    codes: Counter = Counter()
    stop = asyncio.Event()

    async def loop(k: int) -> None:
        while not stop.is_set():
            try:
                status, _, _ = await conns[k].request("GET", path)
                codes[status] += 1
            except (OSError, ValueError, asyncio.IncompleteReadError):
                codes[0] += 1  # the server closed it: open another
                conns[k].close()
                conns[k] = await RawConnection(url, address).open()

    # Spend the address's burst first, until its first 429 (within SPEND_LIMIT_S), so that the answer
    # phase meets an address already over its budget however fast or slow this machine sends: on a
    # loaded machine a loop that only started with the answers could end before it had spent the burst.
    spent = time.monotonic()
    over = asyncio.Event()

    async def spend(k: int) -> None:
        while not over.is_set() and time.monotonic() - spent < SPEND_LIMIT_S:
            try:
                status, _, _ = await conns[k].request("GET", path)
            except (OSError, ValueError, asyncio.IncompleteReadError):
                codes[0] += 1
                conns[k].close()
                conns[k] = await RawConnection(url, address).open()
                continue
            codes[status] += 1
            if status == 429:
                over.set()

    await asyncio.gather(*(spend(k) for k in range(connections)))
    spend_s, spend_ok, spend_refused = time.monotonic() - spent, codes[200], codes[429]
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    t0 = time.monotonic()
    loops = [asyncio.create_task(loop(k)) for k in range(connections)]
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the load closes it
    stop.set()
    wall = time.monotonic() - t0
    await asyncio.wait(loops, timeout=10)
    span = time.monotonic() - first
    for c in (*conns, *held):
        c.close()
    return {"address": address, "connections": connections, "loop_s": wall, "span_s": span, "spend_s": spend_s,
            "spend_ok": spend_ok, "spend_refused": spend_refused, "over_budget_before_answers": over.is_set(), "ok": codes[200],
            "refused": codes[429], "other": {str(k): v for k, v in codes.items() if k not in (200, 429)},
            "streams": streams, "streams_open": stream_codes[200], "streams_refused": stream_codes[429],
            "streams_other": sum(v for k, v in stream_codes.items() if k not in (200, 429))}


def read_loop_main() -> None:
    """The read loop's process: its arguments as one JSON line on stdin, its counts as the last line."""
    args = json.loads(sys.stdin.readline())
    sys.stdout.write(json.dumps(asyncio.run(_read_loop(*args))) + "\n")


async def start_read_loop(url: str, path: str, connections: int, streams: int):
    """The read loop's process, once it is ready (its streams settled, its connections open)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "from benchmarks.read_loop import read_loop_main; read_loop_main()",
        cwd=str(REPO), env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    proc.stdin.write((json.dumps([url, path, READER, connections, streams]) + "\n").encode())
    await proc.stdin.drain()
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    if line.strip() != b"ready":
        proc.kill()
        raise RuntimeError(f"the read loop did not start: {line!r}")
    return proc


async def stop_read_loop(proc) -> dict:
    proc.stdin.close()
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    if proc.returncode != 0:
        raise RuntimeError(f"the read loop failed (exit code {proc.returncode})")
    return json.loads(out.decode().strip().rsplit("\n", 1)[-1])



def loop_lines(loop: dict, students: list[str]) -> list[str]:
    """The class-load report's lines for the loop (after the answer latency they were measured with)."""
    first, last = students
    during = loop["ok"] + loop["refused"] - loop["spend_ok"] - loop["spend_refused"]
    lines = [f"  read loop from {loop['address']} (no student: they are on {first}..{last}), "
             f"{loop['connections']} connections: first spent its burst ({loop['spend_ok']} answered 200 in "
             f"{loop['spend_s']:.2f} s, {'then' if loop['over_budget_before_answers'] else 'NEVER'} refused), "
             f"then GET /api/sessions/CODE for {loop['loop_s']:.2f} s "
             f"{'around every answer' if loop['covered_answers'] else 'NOT around every answer'}: "
             f"{loop['ok']} answered 200, {loop['refused']} refused 429 in all, "
             f"{sum(loop['other'].values())} other ({during / loop['loop_s']:.0f} reads/s around the answers); "
             "answer latency above is with it running"]
    if loop["streams"]:
        lines.append(f"  stream flood from {loop['address']}: {loop['streams']} event streams asked, "
                     f"{loop['streams_open']} held open, {loop['streams_refused']} refused 429, "
                     f"{loop['streams_other']} other")
    return lines
