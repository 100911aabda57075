"""A join flood against a class session (issue 24; prints figures, a benchmark, not a timed test):

    python -m benchmarks.join_flood                      # 30 students, a flooder on 8 connections
    python -m benchmarks.join_flood --students 5 --flood-s 3

The teacher starts a session with the default size (60 places). One address, 127.0.0.2, joins with
made-up nicknames as fast as it can (--connections loops, no cookies kept, one new nickname per
request) for the whole run. Meanwhile 30 students, each from its own address (127.0.0.3, 127.0.0.4,
...; loopback answers on all of 127.0.0.0/8), arrive over --join-ramp seconds and join. The
teacher moves the class to an NSP item; each student answers after up to --think seconds; the
teacher, still under the flood, locks the room and removes every nickname that never answered.

Figures: every student joined (yes/no, with their join p99), answer p50/p99/max (one POST each,
every one must be 201), the flooder's requests by status and rate, how many nicknames it got in,
what the teacher's calls answered, and the CPU. The server runs niced 0, the load in a niced
subprocess (benchmarks/common.run_niced)."""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

from app.config import REPO
from benchmarks.common import cpu, percentile, run_niced, start_server, stop_server

TOKEN = "join-flood-teacher-token"
FLOODER = "127.0.0.2"


def address(k: int) -> str:
    """Student k's own loopback address: 127.0.0.3, 127.0.0.4, ..."""
    n = k + 3
    return f"127.0.{n >> 8 & 255}.{n & 255}"


async def _simulate(url: str, students: int, connections: int, join_ramp: float, think: float, seed: int) -> dict:
    import httpx

    rng = random.Random(seed)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    teacher = httpx.AsyncClient(base_url=url, headers=auth, timeout=60)
    r = await teacher.post("/api/sessions", json={"nsp_count": 1})
    r.raise_for_status()
    code, size = r.json()["code"], None
    sessions = f"/api/sessions/{code}"
    stop = asyncio.Event()
    flood: Counter = Counter()
    flood_t: list[float] = []

    async def flooder(i: int) -> None:
        transport = httpx.AsyncHTTPTransport(local_address=FLOODER)
        async with httpx.AsyncClient(base_url=url, timeout=60, transport=transport) as c:
            n = 0
            while not stop.is_set():
                c.cookies.clear()  # a script: every request a new browser, a new made-up nickname
                try:
                    got = await c.post(sessions + "/join", json={"nickname": f"bot{i}-{n}"})
                    flood[got.status_code] += 1
                except httpx.HTTPError:
                    flood["error"] += 1
                n += 1

    t_start = time.monotonic()
    floods = [asyncio.create_task(flooder(i)) for i in range(connections)]
    await asyncio.sleep(0.5)  # the flood is on before the first student arrives

    joins: list[tuple[float, int]] = []
    answers: list[tuple[float, int]] = []
    errors: list[str] = []
    on_item = asyncio.Event()
    item: dict = {}
    arrivals = sorted(rng.uniform(0, join_ramp) for _ in range(students))

    async def student(k: int) -> None:
        await asyncio.sleep(arrivals[k])
        transport = httpx.AsyncHTTPTransport(local_address=address(k))
        async with httpx.AsyncClient(base_url=url, timeout=60, transport=transport) as c:
            t0 = time.monotonic()
            try:
                got = await c.post(sessions + "/join", json={"nickname": f"Student {k + 1}"})
                joins.append((time.monotonic() - t0, got.status_code))
            except httpx.HTTPError as e:
                joins.append((time.monotonic() - t0, 0))
                errors.append(f"join {k}: {e!r}")
                return
            if got.status_code != 200:
                errors.append(f"join {k}: {got.status_code} {got.text[:160]}")
                return
            await on_item.wait()
            await asyncio.sleep(rng.uniform(0, think))
            t1 = time.monotonic()
            try:
                got = await c.post(sessions + "/answers", json={"activity": "nsp", "item": item["id"],
                                                                "answer": rng.choice(("IsNext", "NotNext"))})
                answers.append((time.monotonic() - t1, got.status_code))
                if got.status_code != 201:
                    errors.append(f"answer {k}: {got.status_code} {got.text[:160]}")
            except httpx.HTTPError as e:
                answers.append((time.monotonic() - t1, 0))
                errors.append(f"answer {k}: {e!r}")

    crowd = [asyncio.create_task(student(k)) for k in range(students)]
    while len(joins) < students:
        await asyncio.sleep(0.05)
    t_follow = time.monotonic()
    state = await teacher.put(sessions + "/state", json={"page": "nsp"})
    teacher_calls = [state.status_code]
    item["id"] = state.json()["item"]
    on_item.set()
    await asyncio.gather(*crowd)
    answer_window = time.monotonic() - t_follow
    # the teacher, still under the flood: closes the room, removes the nicknames that never answered
    locked = await teacher.put(sessions + "/state", json={"room_locked": True})
    removed = await teacher.delete(sessions + "/participants", params={"never_answered": "true"})
    teacher_calls += [locked.status_code, removed.status_code]
    stop.set()
    await asyncio.gather(*floods)
    flood_s = time.monotonic() - t_start
    final = (await teacher.get(sessions)).json()
    size = final.get("max_participants")
    people = final.get("participants", [])
    await teacher.aclose()
    join_ok = sum(1 for _, s in joins if s == 200)
    answer_ms = [t * 1000 for t, s in answers]
    return {"students": students, "connections": connections, "joined": join_ok,
            "join_p99_ms": percentile([t * 1000 for t, s in joins if s == 200], 99),
            "answered": sum(1 for _, s in answers if s == 201), "answer_window_s": answer_window,
            "answer_p50_ms": percentile(answer_ms, 50), "answer_p99_ms": percentile(answer_ms, 99),
            "answer_max_ms": max(answer_ms) if answer_ms else float("nan"),
            "flood": {str(k): v for k, v in sorted(flood.items(), key=str)}, "flood_s": flood_s,
            "flood_rate": sum(flood.values()) / flood_s, "flooder_joined": flood.get(200, 0),
            "teacher": teacher_calls, "removed": removed.json().get("removed") if removed.status_code == 200 else None,
            "left_in": len(people), "left_students": sum(p["nickname"].startswith("Student ") for p in people),
            "size": size, "errors": errors[:20], "error_count": len(errors)}


def simulate(*args) -> dict:
    return asyncio.run(_simulate(*args))


def run(students: int = 30, connections: int = 8, join_ramp: float = 3.0, think: float = 1.0, seed: int = 0,
        nice: bool = True) -> dict:
    data_dir = Path(tempfile.mkdtemp(prefix="playground-join-flood-"))
    proc, url = start_server(REPO / "models", ["--data-dir", str(data_dir), "--instructor-token", TOKEN],
                             log=data_dir / "server.log")
    try:
        load = (url, students, connections, join_ramp, think, seed)
        r = run_niced(simulate, *load) if nice else simulate(*load)
    finally:
        stop_server(proc)
        log = (data_dir / "server.log").read_text(errors="replace")
        shutil.rmtree(data_dir, ignore_errors=True)
    r["tracebacks"] = log.count("Traceback")
    r["cpu"], r["niced"] = cpu(), nice
    r["served"] = (r["joined"] == r["answered"] == students and r["error_count"] == 0
                   and all(s in (200, 201) for s in r["teacher"]) and r["left_students"] == students)
    return r


def report(r: dict) -> str:
    lines = [
        f"join flood: {r['students']} students from their own addresses; 1 flooder ({FLOODER}) on {r['connections']} "
        f"connections; session of {r['size']} places; load generator {'niced' if r['niced'] else 'not niced'}",
        f"  every student joined: {'yes' if r['joined'] == r['students'] else 'NO'} ({r['joined']}/{r['students']}); "
        f"join p99 {r['join_p99_ms']:.0f} ms",
        f"  answers: {r['answered']}/{r['students']} accepted in {r['answer_window_s']:.2f} s; p50 "
        f"{r['answer_p50_ms']:.0f} ms, p99 {r['answer_p99_ms']:.0f} ms, max {r['answer_max_ms']:.0f} ms",
        f"  flooder: {sum(v for v in r['flood'].values())} joins in {r['flood_s']:.1f} s ({r['flood_rate']:.0f}/s), "
        f"by status {json.dumps(r['flood'])}; nicknames it got in: {r['flooder_joined']}",
        f"  teacher under the flood: follow-me, lock the room, remove the silent -> {r['teacher']}; removed "
        f"{r['removed']}; left in the class: {r['left_in']} ({r['left_students']} students)",
        f"  server log tracebacks: {r['tracebacks']}",
        f"  the class and its teacher were served: {'yes' if r['served'] else 'NO'}",
        f"  cpu: {r['cpu']}",
    ]
    lines += [f"  error: {e}" for e in r["errors"]]
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.join_flood", description=__doc__.split("\n")[0])
    p.add_argument("--students", type=int, default=30)
    p.add_argument("--connections", type=int, default=8, help="the flooder's concurrent connections")
    p.add_argument("--join-ramp", type=float, default=3.0, help="students arrive over this many seconds")
    p.add_argument("--think", type=float, default=1.0, help="a student answers within this many seconds")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-nice", action="store_true", help="run the load at the server's priority, in this process")
    p.add_argument("--json", action="store_true", help="also print the raw figures as one JSON line")
    a = p.parse_args(argv)
    r = run(a.students, a.connections, a.join_ramp, a.think, a.seed, not a.no_nice)
    print(report(r), flush=True)
    if a.json:
        print(json.dumps(r))
    if not r["served"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
