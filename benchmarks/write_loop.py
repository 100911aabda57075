"""The class-load benchmark's write loop (issue 53 must 7; `python -m benchmarks.class_load --write-loop N`):
one student who has JOINED the class, on an address of its own (WRITER, 127.1.0.2: the students are on
127.0.0.3, 127.0.0.4, ..., the teacher on 127.0.0.1, the read loop on 127.0.0.2), loops writes with its
participant cookie on N keep-alive connections through the answer phase, in a process of its own so
that its CPU does not show up as latency in the load's event loop:

1. before the answer phase, its own POST /join, until the server first refuses it (429), so that the
   answers always meet a student already over its write budget however fast this machine sends (at
   most SPEND_LIMIT_S, and SPEND_MAX requests where the server has no budget at all);
2. then its own join again until the load tells it the item the class is on (just after "follow
   me"), and from then POST /answers to that item (one 201 at most, then 409: already answered)
   until the load closes its stdin.

It counts each kind's statuses. Its one accepted answer, if any, is an answer like a classmate's:
the load adds it to what the database and the results must hold (own_answers)."""
from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections import Counter

from app.config import REPO
from benchmarks.common import RawConnection

WRITER = "127.1.0.2"  # no student's address (theirs are 127.0.x.y), not the teacher's nor the read loop's
NICKNAME = "Write loop"
CHOICE = "IsNext"  # the answer it sends
SPEND_LIMIT_S, SPEND_MAX = 60.0, 1000  # the budget's 30 at once are spent long before either


async def _join(url: str, path: str, address: str) -> str:
    """Join as NICKNAME from `address`; the participant cookie as a Cookie header's value."""
    import httpx

    own = httpx.AsyncHTTPTransport(local_address=address)
    async with httpx.AsyncClient(base_url=url, timeout=60, transport=own) as c:
        r = await c.post(path + "/join", json={"nickname": NICKNAME})
        r.raise_for_status()
        return "; ".join(f"{k}={v}" for k, v in c.cookies.items())


async def _write_loop(url: str, path: str, address: str, connections: int) -> dict:
    cookie = await _join(url, path, address)
    conns = [await RawConnection(url, address, cookie).open() for _ in range(connections)]
    codes = {"spend": Counter(), "join": Counter(), "answer": Counter()}
    join_body = json.dumps({"nickname": NICKNAME}).encode()
    target: dict = {}  # {"item": ...} once the load has told it
    stop = asyncio.Event()

    async def send(k: int, kind: str) -> int:
        if kind == "answer":
            method, to, body = "POST", path + "/answers", json.dumps(
                {"activity": "nsp", "item": target["item"], "answer": CHOICE}).encode()
        else:
            method, to, body = "POST", path + "/join", join_body
        try:
            status, _, _ = await conns[k].request(method, to, body)
        except (OSError, ValueError, asyncio.IncompleteReadError):
            status = 0  # the server closed it: open another
            conns[k].close()
            conns[k] = await RawConnection(url, address, cookie).open()
        codes[kind][status] += 1
        return status

    spent, over = time.monotonic(), asyncio.Event()

    async def spend(k: int) -> None:
        while not over.is_set() and time.monotonic() - spent < SPEND_LIMIT_S and sum(codes["spend"].values()) < SPEND_MAX:
            if await send(k, "spend") == 429:
                over.set()

    await asyncio.gather(*(spend(k) for k in range(connections)))
    spend_s = time.monotonic() - spent

    async def loop(k: int) -> None:
        while not stop.is_set():
            await send(k, "answer" if "item" in target else "join")

    sys.stdout.write("ready\n")
    sys.stdout.flush()
    t0 = time.monotonic()
    loops = [asyncio.create_task(loop(k)) for k in range(connections)]
    reading = asyncio.get_running_loop()
    item = (await reading.run_in_executor(None, sys.stdin.readline)).strip()
    if item:
        target["item"] = item
        await reading.run_in_executor(None, sys.stdin.read)  # until the load closes it
    stop.set()
    wall = time.monotonic() - t0
    await asyncio.wait(loops, timeout=10)
    for c in conns:
        c.close()
    return {"address": address, "connections": connections, "spend_s": spend_s, "over_budget_before_answers": over.is_set(),
            "loop_s": wall, **{kind: {str(s): n for s, n in sorted(c.items())} for kind, c in codes.items()}}


def write_loop_main() -> None:
    """The write loop's process: its arguments as one JSON line on stdin, then the item; its counts last."""
    args = json.loads(sys.stdin.readline())
    sys.stdout.write(json.dumps(asyncio.run(_write_loop(*args))) + "\n")


async def start_write_loop(url: str, path: str, connections: int):
    """The write loop's process, once it is ready (joined, and refused once)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "from benchmarks.write_loop import write_loop_main; write_loop_main()",
        cwd=str(REPO), env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    proc.stdin.write((json.dumps([url, path, WRITER, connections]) + "\n").encode())
    await proc.stdin.drain()
    line = await asyncio.wait_for(proc.stdout.readline(), SPEND_LIMIT_S + 60)
    if line.strip() != b"ready":
        proc.kill()
        raise RuntimeError(f"the write loop did not start: {line!r}")
    return proc


async def aim_write_loop(proc, item: str) -> None:
    """The item the class is on: the loop turns from joins to answers."""
    proc.stdin.write((item + "\n").encode())
    await proc.stdin.drain()


async def stop_write_loop(proc) -> dict:
    proc.stdin.close()
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    if proc.returncode != 0:
        raise RuntimeError(f"the write loop failed (exit code {proc.returncode})")
    return json.loads(out.decode().strip().rsplit("\n", 1)[-1])


def own_answers(loop: dict | None) -> dict:
    """The loop's accepted answer ({CHOICE: 1}, or nothing), which the database and the results hold too."""
    return {CHOICE: loop["answer"].get("201", 0)} if loop and loop["answer"].get("201") else {}


def write_lines(loop: dict) -> list[str]:
    """The class-load report's line for the write loop (after the answer latency it was measured with)."""
    def counts(kind: str, wanted: tuple[str, ...]) -> str:
        got = loop[kind]
        other = sum(n for s, n in got.items() if s not in wanted)
        return ", ".join(f"{got.get(s, 0)} {s}" for s in wanted) + f", {other} other"

    during = sum(loop["join"].values()) + sum(loop["answer"].values())
    spend = loop["spend"]
    return [f"  write loop from {loop['address']} (a joined student), {loop['connections']} connections: first its "
            f"own POST join until refused ({spend.get('200', 0)} answered 200 in {loop['spend_s']:.2f} s, "
            f"{'then' if loop['over_budget_before_answers'] else 'NEVER'} {spend.get('429', 0)} refused 429), then "
            f"for {loop['loop_s']:.2f} s {'around every answer' if loop['covered_answers'] else 'NOT around every answer'}: "
            f"joins {counts('join', ('200', '429'))}; answers {counts('answer', ('201', '409', '429'))} "
            f"({during / loop['loop_s']:.0f} writes/s); answer latency above is with it running"]
