"""A class session under load (prints figures; a benchmark, not a timed test):

    python -m benchmarks.class_load                    # 200 students, its own server on a free port
    python -m benchmarks.class_load --students 5       # a quick look (the size the test runs)
    python -m benchmarks.class_load --workers 2        # two uvicorn workers on the one SQLite file
    python -m benchmarks.class_load --students 30 --read-loop 16   # answers while one address loops reads
    python -m benchmarks.class_load --students 30 --write-loop 8   # ... while a joined student loops writes

The instructor starts a session; N students, each an httpx.AsyncClient of its own (its own cookie
jar and connections), arrive spread over --join-ramp seconds, join with a nickname and open the
session's event stream as the join page does, while 2 dashboards (the instructor's) watch theirs.
The teacher moves the class to an NSP item; each student answers when its stream shows the item,
after a think time of up to --think seconds, and a share of them double-tap (a second, identical
request at the same moment, which must be refused 409).

Then every answer must be counted exactly once, checked three ways: the SQLite file read directly
(sqlite3, read-only), GET /api/sessions/{code}/results, and the dashboards' final count. Figures:

- join: first join sent -> last join answered                     (target: all 200 within 10 s)
- answer window: teacher's "follow me" -> last answer answered    (target <= 5 s)
- answer latency p50 / p99 / max, one POST each                   (target p99 <= 250 ms)
- dashboards: last answer answered -> both showed the final count (target <= 2 s)
- follow: "follow me" -> each student's stream showed the item
- counts: accepted, refused double-taps, errors, database, results endpoint; the CPU.

--read-loop N (issue 43): for the whole answer phase (from just before "follow me" until every
student's answering is over) one more client, not a student of the class and on an address no
student has (READER, 127.0.0.2; the students are on 127.0.0.3, 127.0.0.4, ...; the teacher and the
dashboards on 127.0.0.1), loops GET /api/sessions/{code} as fast as it can on N keep-alive
connections, and with --stream-flood M first opens M event streams from that address and holds them.
It runs in a process of its own (same niceness as the load), on the raw client of
benchmarks/common.py, so that its CPU does not delay the students' event loop, where answer latency
is timed. The report adds its reads answered 200 / refused 429 and their rate, the streams it got
open / refused, and the answer p50/p99 above are then the ones with the loop running. The server's
budgets (app/classes/readers.py): an address without a student's cookie reads 120 at once, then 30 a
second, and holds at most 8 streams.

--write-loop N (issue 53 must 7): the same around the answer phase, from a student that has joined
(benchmarks/write_loop.py, on 127.1.0.2), looping its own POST join and then POST answers (409s) with
its cookie on N connections; its writes spend its own budget (app/classes/writers.py).

The load runs in a niced subprocess (benchmarks/common.run_niced), so that on two cores its own
CPU use does not show up as server latency."""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import sqlite3
import tempfile
import time
from collections import Counter
from pathlib import Path

from app.config import REPO
from benchmarks.common import cpu, percentile, run_niced, server_pids, start_server, stop_server
from benchmarks.read_loop import READER, loop_lines, start_read_loop, stop_read_loop
from benchmarks.write_loop import WRITER, aim_write_loop, own_answers, start_write_loop, stop_write_loop, write_lines

TOKEN = "class-load-teacher-token"
CHOICES = ("IsNext", "NotNext")


def student_address(k: int) -> str:
    """Student k's own loopback address (limits on new nicknames are per address): 127.0.0.3, ..."""
    n = k + 3
    return f"127.0.{n >> 8 & 255}.{n & 255}"


# --- the load (runs in the niced subprocess) ----------------------------------------------------

async def sse(client, path: str, on_event, headers: dict | None = None) -> None:
    """Read a server-sent event stream, calling on_event(time, event, data) for each event."""
    async with client.stream("GET", path, headers=headers or {}) as r:
        kind, data = None, None
        async for line in r.aiter_lines():
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:"):
                data = json.loads(line[5:])
            elif not line and kind:
                on_event(time.monotonic(), kind, data)
                kind, data = None, None


async def _simulate(url: str, token: str, students: int, join_ramp: float, think: float, double_share: float,
                    dashboards: int, seed: int, read_loop: int = 0, stream_flood: int = 0, write_loop: int = 0) -> dict:
    import ssl

    import httpx

    # one TLS context for every client: httpx builds one per client otherwise (~60 ms of CPU each
    # on a busy machine), which on 200 clients would be the load generator measuring itself
    tls = ssl.create_default_context()
    rng = random.Random(seed)
    auth = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=4, max_keepalive_connections=4)
    teacher = httpx.AsyncClient(base_url=url, headers=auth, timeout=60, verify=tls)
    r = await teacher.post("/api/sessions", json={"nsp_count": 1, "max_participants": max(60, students + 1)})
    r.raise_for_status()
    code = r.json()["code"]
    sessions = f"/api/sessions/{code}"

    # the dashboards: (time, answers pooled on the current item) for each `results` event
    seen: list[list[tuple[float, int]]] = [[] for _ in range(dashboards)]
    board_clients = [httpx.AsyncClient(base_url=url, headers=auth, timeout=None, verify=tls) for _ in range(dashboards)]

    def on_board(k: int):
        def handle(t: float, kind: str, data: dict) -> None:
            if kind == "results":
                seen[k].append((t, sum(answered(it) for it in data["items"] if it["activity"] == "nsp")))
        return handle

    tasks = [asyncio.create_task(sse(c, sessions + "/events", on_board(k))) for k, c in enumerate(board_clients)]

    joined_all = asyncio.Event()
    joins: list[tuple[float, float, int]] = []  # (start, end, status)
    answers: list[tuple[float, float, int]] = []  # (start, end, status) of every answer POST
    chosen: dict[int, str] = {}  # student -> the answer it sent
    follow_s: list[float] = []
    done: list[int] = []  # students whose answering is over (accepted, refused or failed)
    finished = asyncio.Event()  # the figures are taken: students close their streams
    pace: dict = {}
    errors: list[str] = []
    arrivals = sorted(rng.uniform(0, join_ramp) for _ in range(students))
    plans = [(rng.choice(CHOICES), rng.uniform(0, think), rng.random() < double_share) for _ in range(students)]

    async def student(k: int) -> None:
        await asyncio.sleep(arrivals[k])
        choice, pause, double = plans[k]
        # each student's phone has its own address (limits on new nicknames are per address): 127.0.x.y
        own = httpx.AsyncHTTPTransport(local_address=student_address(k), limits=limits, verify=tls)
        async with httpx.AsyncClient(base_url=url, timeout=60, transport=own) as c:
            t0 = time.monotonic()
            try:
                r = await c.post(sessions + "/join", json={"nickname": f"Student {k + 1}"})
                status = r.status_code
            except httpx.HTTPError as e:
                status, r = 0, None
                errors.append(f"join {k}: {e!r}")
            joins.append((t0, time.monotonic(), status))
            if len(joins) == students:
                joined_all.set()
            if status != 200:
                if r is not None:
                    errors.append(f"join {k}: {status} {r.text[:200]}")
                return
            on_item = asyncio.Event()

            def handle(t: float, kind: str, data: dict) -> None:
                if kind == "state" and data.get("page") == "nsp" and data.get("item") and not on_item.is_set():
                    follow_s.append(t - pace["t"])
                    on_item.set()

            stream = asyncio.create_task(sse(c, sessions + "/events", handle))
            try:
                try:
                    await asyncio.wait_for(on_item.wait(), think + 60)
                except asyncio.TimeoutError:
                    errors.append(f"student {k}: its stream never showed the item")
                    done.append(k)
                    return
                await asyncio.sleep(pause)
                body = {"activity": "nsp", "item": pace["item"], "answer": choice}

                async def send() -> int:
                    t1 = time.monotonic()
                    try:
                        got = await c.post(sessions + "/answers", json=body)
                        answers.append((t1, time.monotonic(), got.status_code))
                        if got.status_code not in (201, 409):
                            errors.append(f"answer {k}: {got.status_code} {got.text[:200]}")
                        return got.status_code
                    except httpx.HTTPError as e:
                        answers.append((t1, time.monotonic(), 0))
                        errors.append(f"answer {k}: {e!r}")
                        return 0

                codes = await asyncio.gather(*[send() for _ in range(2 if double else 1)])
                if 201 in codes:
                    chosen[k] = choice
                done.append(k)
                await finished.wait()  # the stream stays open, as a student's page keeps it
            finally:
                stream.cancel()

    crowd = [asyncio.create_task(student(k)) for k in range(students)]
    await asyncio.wait_for(joined_all.wait(), join_ramp + 120)
    looping = await start_read_loop(url, sessions, read_loop, stream_flood) if read_loop or stream_flood else None
    writing = await start_write_loop(url, sessions, write_loop) if write_loop else None
    loop_started = time.monotonic()
    pace["t"] = time.monotonic()
    r = await teacher.put(sessions + "/state", json={"page": "nsp"})
    r.raise_for_status()
    pace["item"] = r.json()["item"]
    if writing:
        await aim_write_loop(writing, pace["item"])
    pace["put_ms"] = (time.monotonic() - pace["t"]) * 1000
    ok_joined = sum(1 for _, _, s in joins if s == 200)
    deadline = time.monotonic() + think + 120
    while len(follow_s) < ok_joined and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    while len(done) < ok_joined and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    loop_stopped = time.monotonic()
    loop = await stop_read_loop(looping) if looping else None
    wloop = await stop_write_loop(writing) if writing else None
    accepted = len(chosen)
    last_answer = max((end for _, end, s in answers if s == 201), default=pace["t"])
    # the dashboards' final count: wait up to 30 s for both to show it
    board_deadline = time.monotonic() + 30
    pooled_n = accepted + sum(own_answers(wloop).values())  # the write loop's answer is pooled too
    while not all(any(n == pooled_n for _, n in s) for s in seen) and time.monotonic() < board_deadline:
        await asyncio.sleep(0.02)
    final_seen = [min((t for t, n in s if n == pooled_n), default=None) for s in seen]
    # The split is the reveal's (before it the pool shows counts answered only): reveal, then read it.
    await teacher.put(sessions + "/state", json={"revealed": True})
    pooled = (await teacher.get(sessions + "/results")).json()
    finished.set()
    await asyncio.gather(*crowd, return_exceptions=True)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for c in (teacher, *board_clients):
        await c.aclose()
    item = next((it for it in pooled["items"] if it["activity"] == "nsp" and it["item"] == pace["item"]), None)
    lat = [(end - start) * 1000 for start, end, s in answers if s in (201, 409)]
    for running in filter(None, (loop, wloop)):  # every answer POST began and ended while the loop ran
        running["covered_answers"] = all(loop_started <= s and e <= loop_stopped for s, e, _ in answers)
    return {
        "code": code, "item": pace["item"], "students": students,
        "joined": ok_joined, "join_s": max(e for _, e, _ in joins) - min(s for s, _, _ in joins),
        "join_p99_ms": percentile([(e - s) * 1000 for s, e, st in joins if st == 200], 99),
        "posts": len(answers), "accepted": accepted, "refused_409": sum(1 for *_, s in answers if s == 409),
        "double_taps": sum(1 for k in range(students) if plans[k][2]),
        "expected": dict(Counter(chosen.values())), "errors": errors[:20], "error_count": len(errors),
        "answer_window_s": last_answer - pace["t"], "pace_put_ms": pace["put_ms"],
        "answer_p50_ms": percentile(lat, 50), "answer_p99_ms": percentile(lat, 99), "answer_max_ms": max(lat, default=0),
        "follow_p50_s": percentile(follow_s, 50), "follow_max_s": max(follow_s, default=float("nan")),
        "followed": len(follow_s),
        "dashboards_final_s": [None if t is None else t - last_answer for t in final_seen],
        "results_counts": item.get("counts") if item else None,
        "read_loop": loop, "write_loop": wloop, "student_addresses": [student_address(0), student_address(max(0, students - 1))],
    }


def answered(item: dict) -> int:
    """How many answered an item: before the reveal the pool carries the count only, after it the split."""
    return item["answered"] if "answered" in item else sum(item.get("counts", {}).values())


def simulate(*args) -> dict:
    return asyncio.run(_simulate(*args))


# --- the checks and the report (this process) ---------------------------------------------------

def database_counts(data_dir: Path, code: str, item: str) -> dict:
    """Answers to the item straight from the SQLite file: per answer, rows and distinct students."""
    con = sqlite3.connect(f"file:{data_dir / 'classes.sqlite3'}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT a.answer, count(*), count(DISTINCT a.participant_id) FROM class_answers a "
                           "JOIN class_sessions s ON s.id = a.session_id WHERE s.code = ? AND a.activity = 'nsp' "
                           "AND a.item = ? GROUP BY a.answer", (code, item)).fetchall()
        total, people = con.execute("SELECT count(*), count(DISTINCT a.participant_id) FROM class_answers a "
                                    "JOIN class_sessions s ON s.id = a.session_id WHERE s.code = ?", (code,)).fetchone()
    finally:
        con.close()
    return {"counts": {a: n for a, n, _ in rows}, "rows": total, "students": people}


def cpu_seconds(root: int) -> float:
    """CPU time (user + system) the server process and its workers have used so far."""
    total = 0.0
    for pid in {root, *server_pids(root)}:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            pass
    return total


def run(students: int = 200, join_ramp: float = 5.0, think: float = 3.0, double_share: float = 0.1,
        dashboards: int = 2, workers: int = 1, seed: int = 0, nice: bool = True, read_loop: int = 0,
        stream_flood: int = 0, port: int | None = None, write_loop: int = 0) -> dict:
    data_dir = Path(tempfile.mkdtemp(prefix="playground-class-load-"))
    args = ["--data-dir", str(data_dir), "--instructor-token", TOKEN, "--workers", str(workers)]
    proc, url = start_server(REPO / "models", args, log=data_dir / "server.log", port=port)
    try:
        used, t0 = cpu_seconds(proc.pid), time.monotonic()
        load = (url, TOKEN, students, join_ramp, think, double_share, dashboards, seed, read_loop, stream_flood, write_loop)
        r = run_niced(simulate, *load) if nice else simulate(*load)
        r["server_cpu_s"], r["wall_s"] = cpu_seconds(proc.pid) - used, time.monotonic() - t0
        r["database"] = database_counts(data_dir, r["code"], r["item"])
    finally:
        stop_server(proc)
        shutil.rmtree(data_dir, ignore_errors=True)
    looped = own_answers(r["write_loop"])  # the write loop's one accepted answer is in the database too
    expected = {c: r["expected"].get(c, 0) + looped.get(c, 0) for c in CHOICES}
    db = {c: r["database"]["counts"].get(c, 0) for c in CHOICES}
    r["exactly_once"] = (r["accepted"] == r["joined"] == students and r["error_count"] == 0
                         and db == expected == r["results_counts"]
                         and r["database"]["rows"] == r["database"]["students"] == students + sum(looped.values())
                         and r["refused_409"] == r["posts"] - r["accepted"])
    r["workers"], r["cpu"], r["niced"] = workers, cpu(), nice
    return r


def report(r: dict) -> str:
    boards = ", ".join("never" if s is None else f"{s:.2f} s" for s in r["dashboards_final_s"])
    db = r["database"]
    lines = [
        f"class load: {r['students']} students, {len(r['dashboards_final_s'])} dashboards, {r['workers']} worker(s), "
        f"load generator {'niced' if r['niced'] else 'at the server priority'}",
        f"  join: {r['joined']}/{r['students']} joined in {r['join_s']:.2f} s (target <= 10 s); "
        f"join p99 {r['join_p99_ms']:.0f} ms",
        f"  answers: {r['posts']} POSTs in {r['answer_window_s']:.2f} s after follow-me (target <= 5 s); "
        f"p50 {r['answer_p50_ms']:.0f} ms, p99 {r['answer_p99_ms']:.0f} ms (target <= 250 ms), max {r['answer_max_ms']:.0f} ms",
        f"  follow-me reached {r['followed']} streams: p50 {r['follow_p50_s']:.2f} s, max {r['follow_max_s']:.2f} s",
        f"  dashboards showed the final count after the last answer: {boards} (target <= 2 s)",
        f"  counts: accepted {r['accepted']}, double-taps refused 409: {r['refused_409']}, errors {r['error_count']}; "
        f"sent {json.dumps(r['expected'], sort_keys=True)}, database {json.dumps(db['counts'], sort_keys=True)} "
        f"({db['rows']} rows, {db['students']} students), results {json.dumps(r['results_counts'], sort_keys=True)}",
        f"  every answer counted exactly once: {'yes' if r['exactly_once'] else 'NO'}",
        f"  server CPU time: {r['server_cpu_s']:.1f} s over the {r['wall_s']:.1f} s run",
        f"  cpu: {r['cpu']}",
    ]
    if r.get("read_loop"):
        lines[3:3] = loop_lines(r["read_loop"], r["student_addresses"])
    if r.get("write_loop"):
        lines[3:3] = write_lines(r["write_loop"])
    lines += [f"  error: {e}" for e in r["errors"]]
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.class_load", description=__doc__.split("\n")[0])
    p.add_argument("--students", type=int, default=200)
    p.add_argument("--join-ramp", type=float, default=5.0, help="students arrive over this many seconds")
    p.add_argument("--think", type=float, default=3.0, help="a student answers within this many seconds")
    p.add_argument("--double-share", type=float, default=0.1, help="share of students who double-tap")
    p.add_argument("--dashboards", type=int, default=2)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-nice", action="store_true", help="run the load at the server's priority, in this process "
                   "(on a machine busy with other work a niced load generator is starved and measures itself)")
    p.add_argument("--read-loop", type=int, default=0, metavar="N", help="during the answer phase one more "
                   f"address ({READER}, no student) loops GET /api/sessions/CODE on N connections (issue 43)")
    p.add_argument("--stream-flood", type=int, default=0, metavar="M", help=f"and first opens M event streams "
                   f"from {READER}, held for the answer phase")
    p.add_argument("--write-loop", type=int, default=0, metavar="N", help="during the answer phase a joined "
                   f"student ({WRITER}) loops its own join, then answers, on N connections (issue 53)")
    p.add_argument("--port", type=int, default=0, help="the server's port (default: a free one)")
    p.add_argument("--json", action="store_true", help="also print the raw figures as one JSON line")
    a = p.parse_args(argv)
    r = run(a.students, a.join_ramp, a.think, a.double_share, a.dashboards, a.workers, a.seed, not a.no_nice,
            a.read_loop, a.stream_flood, a.port or None, a.write_loop)
    print(report(r), flush=True)
    if a.json:
        print(json.dumps(r))
    if not r["exactly_once"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
