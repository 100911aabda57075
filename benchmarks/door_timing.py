"""How long a join from an address whose code guesses are spent takes, right code against wrong
(issue 53; prints figures, a benchmark, not a timed test):

    python -m benchmarks.door_timing                      # 200 joins of each, one connection, 105 ms apart
    python -m benchmarks.door_timing --joins 400 --gap-ms 120

Such an address gets the same 429 for a right code and a wrong one (app/classes/door.py); this
measures whether the time to answer tells them apart. A real server (`python -m app`) on loopback
with a fresh data folder; the teacher starts a session; the guesser, 127.0.0.5, first spends its
code guesses with wrong codes, then sends joins with the right code and with wrong ones (one letter
changed each time) in a random order on one keep-alive connection, `--gap-ms` apart. Only the 429s
are timed: a guess refilled (one every few seconds) gets a real answer, counted apart, and so does a
429 of the address's write budget (app/classes/writers.py: each refused join spends one of its
writes, 10 a second past the first 120, so the joins are sent a little slower than that).

Figures: p10/p50/p90 of each kind in milliseconds, the p50 difference, and the CPU with its load."""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import httpx

from app.classes.codes import ALPHABET
from app.config import REPO
from benchmarks.common import RawConnection, cpu, percentile, start_server, stop_server

TOKEN = "door-timing-teacher-token"
GUESSER = "127.0.0.5"


def wrong(code: str, rng: random.Random) -> str:
    """The right code with one letter changed: a code of the right shape that names no session."""
    k = rng.randrange(len(code))
    return code[:k] + rng.choice([c for c in ALPHABET if c != code[k]]) + code[k + 1:]


async def measure(url: str, joins: int, gap_ms: float, seed: int) -> dict:
    rng = random.Random(seed)
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as teacher:
        r = await teacher.post("/api/sessions", json={"nsp_count": 1})
        r.raise_for_status()
        code = r.json()["code"]
    conn = await RawConnection(url, local_address=GUESSER).open()
    body = json.dumps({"nickname": "Sam"}).encode()
    spent = 0
    while (await conn.request("POST", f"/api/sessions/{wrong(code, rng)}/join", body))[0] != 429:
        spent += 1  # the address's burst of wrong codes
        if spent > 1000:
            raise SystemExit("the guesser's code guesses were never spent (no 429 after 1000 wrong codes)")
    order = ["right"] * joins + ["wrong"] * joins
    rng.shuffle(order)
    times: dict[str, list[float]] = {"right": [], "wrong": []}
    other: Counter = Counter()
    for kind in order:
        target = code if kind == "right" else wrong(code, rng)
        status, ms, raw = await conn.request("POST", f"/api/sessions/{target}/join", body)
        if status == 429 and b"too many answers or joins" in raw:
            other[f"{kind} 429 (write budget)"] += 1
        elif status == 429:
            times[kind].append(ms)
        else:
            other[f"{kind} {status}"] += 1
        if gap_ms:
            await asyncio.sleep(gap_ms / 1000)
    conn.close()
    return {"spent_after": spent, "times": times, "other": dict(other)}


def run(joins: int = 200, gap_ms: float = 105.0, seed: int = 0, port: int | None = None) -> dict:
    data = Path(tempfile.mkdtemp(prefix="door-timing-"))
    proc, url = start_server(REPO / "models", ["--data-dir", str(data), "--instructor-token", TOKEN], port=port)
    try:
        result = asyncio.run(measure(url, joins, gap_ms, seed))
    finally:
        stop_server(proc)
        shutil.rmtree(data, ignore_errors=True)
    return {**result, "joins": joins, "gap_ms": gap_ms, "cpu": cpu()}


def report(r: dict) -> str:
    rows = [f"door timing: joins from a spent address ({r['joins']} of each, {r['gap_ms']:g} ms apart), "
            f"its guesses spent after {r['spent_after']} wrong codes"]
    p50 = {}
    for kind in ("right", "wrong"):
        t = r["times"][kind]
        p50[kind] = percentile(t, 50)
        rows.append(f"  {kind} code: {len(t)} answered 429, p10 {percentile(t, 10):.2f} / p50 {p50[kind]:.2f} / "
                    f"p90 {percentile(t, 90):.2f} ms")
    rows.append(f"  p50 right - wrong: {p50['right'] - p50['wrong']:+.2f} ms")
    if r["other"]:
        rows.append("  not 429 (a guess refilled meanwhile): " + ", ".join(f"{k}: {n}" for k, n in sorted(r["other"].items())))
    rows.append(f"  {r['cpu']}")
    return "\n".join(rows)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--joins", type=int, default=200, help="joins of each kind (default 200)")
    parser.add_argument("--gap-ms", type=float, default=105.0,
                        help="pause between joins (default 105: under the address's 10 writes a second)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--port", type=int, default=None, help="the server's port (default: a free one)")
    args = parser.parse_args(argv)
    print(report(run(args.joins, args.gap_ms, args.seed, args.port)), flush=True)


if __name__ == "__main__":
    main()
