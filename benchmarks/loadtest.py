"""A classroom on loopback: `python -m benchmarks.loadtest --students 100 --seconds 60`.

Starts the server (a uvicorn subprocess on 127.0.0.1 serving the shipped models) unless --url is
given, then runs simulated students for the given time, each one a loop of what students do in
the applets, with think times between actions: open a page, click characters to mask, resample
the corruption, step the generator a character at a time, generate and stream text, answer quiz
questions, try their own sentence pairs. Prints the error count, p50/p99 latency per endpoint
and the server's resident memory at start, half time and end.

Then it demonstrates backpressure: a burst of simultaneous generation requests above the
server's in-flight cap; it prints how many were admitted (and finished) and how many got 503,
with their worst latency, and how fast /api/health answered meanwhile.

Only talks to 127.0.0.1 (or the --url you give it). Stops by itself.
"""
from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import httpx

from .common import RawConnection, percentile, rss_mb, start_server, stop_server
from app.config import REPO, Settings

LINES = [
    "To be, or not to be, that is the question.",
    "All the world's a stage, and all the men and women merely players.",
    "Now is the winter of our discontent made glorious summer by this sun of York.",
    "What light through yonder window breaks? It is the east, and Juliet is the sun.",
    "The quality of mercy is not strain'd; it droppeth as the gentle rain from heaven.",
    "Friends, Romans, countrymen, lend me your ears; I come to bury Caesar.",
    "If music be the food of love, play on; give me excess of it.",
    "Some are born great, some achieve greatness, and some have greatness thrust upon them.",
]
PAGES = ["/", "/mask-fill", "/generate", "/nsp", "/attention"]
ASSETS = ["/static/style.css", "/static/lib/api.js", "/static/favicon.svg"]
TIMEOUT = httpx.Timeout(30.0)


class Stats:
    def __init__(self):
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)
        self.busy: dict[str, int] = defaultdict(int)  # 503s that the student retried

    def ok(self, label: str, seconds: float) -> None:
        self.latency[label].append(seconds * 1000)

    def error(self, label: str, why: str) -> None:
        self.errors[f"{label}: {why}"] += 1


class Student:
    """One browser: its own connections (a shared pool's bookkeeping would slow the client down)."""

    def __init__(self, url: str, stats: Stats, rng: random.Random, deadline: float):
        self.url, self.stats, self.rng, self.deadline = url, stats, rng, deadline
        self.gen_text = rng.choice(LINES)[:20]

    async def call(self, method: str, path: str, label: str | None = None, **kw) -> httpx.Response | None:
        """One request, retried after a busy 503 as the applets do (static/lib/api.js: twice at most,
        after Retry-After seconds with jitter). Latency is that of the answer that counted."""
        label = label or f"{method} {path}"
        for attempt in range(3):
            start = time.perf_counter()
            try:
                r = await self.client.request(method, path, **kw)
            except httpx.HTTPError as e:
                self.stats.error(label, type(e).__name__)
                return None
            retry_after = r.headers.get("retry-after")
            if r.status_code != 503 or not retry_after or attempt == 2:
                break
            self.stats.busy[label] += 1
            await asyncio.sleep(float(retry_after) * self.rng.uniform(0.5, 1.5))
        if r.status_code >= 400:
            self.stats.error(label, f"HTTP {r.status_code}")
            return None
        self.stats.ok(label, time.perf_counter() - start)
        return r

    async def stream(self, params: dict) -> None:
        label = "GET /api/generate/stream"
        start = time.perf_counter()
        try:
            async with self.client.stream("GET", "/api/generate/stream", params=params) as r:
                if r.status_code != 200:
                    await r.aread()
                    self.stats.error(label, f"HTTP {r.status_code}")
                    return
                first, done = None, False
                async for line in r.aiter_lines():
                    if first is None and line.startswith("data:"):
                        first = time.perf_counter() - start
                    if line == "event: done":
                        done = True
                    if line == "event: error":
                        self.stats.error(label, "error event")
                        return
        except httpx.HTTPError as e:
            self.stats.error(label, type(e).__name__)
            return
        if not done:
            self.stats.error(label, "stream ended without done")
            return
        self.stats.ok(label + " (first event)", first or 0.0)
        self.stats.ok(label + " (whole)", time.perf_counter() - start)

    async def think(self, low: float = 0.5, high: float = 4.0) -> None:
        await asyncio.sleep(min(self.rng.uniform(low, high), max(0.0, self.deadline - time.monotonic())))

    # ---- what students do
    async def open_page(self) -> None:
        await self.call("GET", self.rng.choice(PAGES), label="GET page")
        for asset in ASSETS:
            await self.call("GET", asset, label="GET static")
        await self.call("GET", "/api/models")

    async def mask_fill(self) -> None:
        text = self.rng.choice(LINES)
        positions = self.rng.sample(range(len(text)), self.rng.randint(1, 3))
        await self.call("POST", "/api/mask-fill", json={"text": text, "positions": positions,
                                                        "top_k": self.rng.choice([5, 8])})

    async def corrupt(self) -> None:
        await self.call("POST", "/api/mask-fill/corrupt", json={
            "text": self.rng.choice(LINES), "mask_rate": self.rng.choice([0.15, 0.3]), "seed": self.rng.randrange(1000)})

    async def step(self) -> None:
        for _ in range(self.rng.randint(1, 5)):  # a few clicks on "next character", or slider drags
            r = await self.call("POST", "/api/next-token", json={
                "prompt": self.gen_text, "temperature": self.rng.choice([0, 0.5, 1.0, 1.5]),
                "top_k": self.rng.choice([0, 0, 5]), "top_p": self.rng.choice([1.0, 0.9])})
            if r is not None:
                data = r.json()
                self.gen_text = (self.gen_text + self.rng.choices(data["chars"], data["final"])[0])[-400:]
            await self.think(0.2, 1.0)

    async def generate(self) -> None:
        await self.call("POST", "/api/generate", json={
            "prompt": self.gen_text, "max_new_tokens": 100, "temperature": 0.8, "seed": self.rng.randrange(1000)})

    async def stream_text(self) -> None:
        await self.stream({"prompt": self.gen_text, "max_new_tokens": 200, "temperature": 0.8,
                           "seed": self.rng.randrange(1000)})

    async def quiz(self) -> None:
        r = await self.call("GET", "/api/nsp/quiz")
        if r is None:
            return
        await self.think(2.0, 6.0)  # reading the two sentences
        await self.call("POST", f"/api/nsp/quiz/{r.json()['id']}/answer", label="POST /api/nsp/quiz/{id}/answer",
                        json={"guess": self.rng.choice(["IsNext", "NotNext"])})

    async def own_pair(self) -> None:
        a, b = self.rng.sample(LINES, 2)
        await self.call("POST", "/api/nsp/predict", json={"a": a[:50], "b": b[:50]})

    async def run(self) -> None:
        limits = httpx.Limits(max_connections=2, max_keepalive_connections=2)
        async with httpx.AsyncClient(base_url=self.url, limits=limits, timeout=TIMEOUT) as self.client:
            await self.lesson()

    async def lesson(self) -> None:
        actions = [(self.mask_fill, 25), (self.corrupt, 10), (self.step, 20), (self.generate, 8),
                   (self.stream_text, 10), (self.quiz, 15), (self.own_pair, 7), (self.open_page, 5)]
        funcs, weights = zip(*actions)
        await asyncio.sleep(self.rng.uniform(0, 2))  # students do not all start on the same tick
        await self.open_page()
        while time.monotonic() < self.deadline:
            await self.rng.choices(funcs, weights)[0]()
            await self.think()


async def classroom(url: str, students: int, seconds: float, pid: int | None, seed: int) -> tuple[Stats, list]:
    stats = Stats()
    deadline = time.monotonic() + seconds
    rss = [("start", rss_mb(pid))]

    async def sample_half() -> None:
        await asyncio.sleep(seconds / 2)
        rss.append(("half time", rss_mb(pid)))

    rng = random.Random(seed)
    crowd = [Student(url, stats, random.Random(rng.random()), deadline) for _ in range(students)]
    await asyncio.gather(sample_half(), *(s.run() for s in crowd))
    rss.append(("end", rss_mb(pid)))
    return stats, rss


async def burst(url: str, size: int) -> dict:
    """`size` generation requests at once on open connections, and /api/health polled meanwhile."""
    conns = [await RawConnection(url).open() for _ in range(size + 1)]
    health_conn, conns = conns[0], conns[1:]
    await asyncio.gather(*(c.request("GET", "/api/health") for c in [health_conn, *conns]))  # warm

    async def one(i: int, conn: RawConnection):
        body = f'{{"prompt": "{LINES[i % len(LINES)][:30]}", "max_new_tokens": 400, "seed": {i}}}'.encode()
        return await conn.request("POST", "/api/generate", body)

    async def health(stop: asyncio.Event):
        times = []
        while not stop.is_set():
            status, ms, _ = await health_conn.request("GET", "/api/health")
            times.append((ms, status))
            await asyncio.sleep(0.02)
        return times

    stop = asyncio.Event()
    poller = asyncio.create_task(health(stop))
    results = await asyncio.gather(*(one(i, c) for i, c in enumerate(conns)), return_exceptions=True)
    stop.set()
    health_times = await poller
    for c in [health_conn, *conns]:
        c.close()
    out = {"ok": [], "busy": [], "other": []}
    for res in results:
        if isinstance(res, BaseException):
            out["other"].append(type(res).__name__)
        elif res[0] == 200:
            out["ok"].append(res[1])
        elif res[0] == 503:
            out["busy"].append(res[1])
        else:
            out["other"].append(f"HTTP {res[0]}")
    out["health"] = health_times
    return out


def report(stats: Stats, rss: list, students: int, seconds: float) -> None:
    total = sum(len(v) for v in stats.latency.values())
    errors = sum(stats.errors.values())
    print(f"\n{students} students, {seconds:g} s: {total} requests answered, {errors} errors"
          f" ({total / seconds:.1f} requests/s)")
    for what, n in sorted(stats.errors.items()):
        print(f"  error  {n:5d} x {what}")
    busy = sum(stats.busy.values())
    print(f"busy answers (503 + Retry-After, retried by the student as the applets do): {busy}"
          + "".join(f"\n  busy   {n:5d} x {label}" for label, n in sorted(stats.busy.items())))
    print(f"\n{'endpoint':<42}{'n':>7}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for label in sorted(stats.latency):
        values = stats.latency[label]
        print(f"{label:<42}{len(values):>7}{percentile(values, 50):>10.1f}{percentile(values, 99):>10.1f}"
              f"{max(values):>10.1f}")
    known = dict(rss)
    if all(v is not None for v in known.values()):
        growth = known["end"] - known["half time"]
        verdict = "OK" if growth <= 20 else "OVER TARGET"
        print(f"\nserver RSS: start {known['start']:.1f} MB, half time {known['half time']:.1f} MB, "
              f"end {known['end']:.1f} MB; growth over the second half {growth:+.1f} MB (target <= 20 MB: {verdict})")
    else:
        print("\nserver RSS: unknown (give --pid with --url to read it)")


def report_burst(out: dict, size: int, cap: int | None) -> None:
    cap_text = f"the cap of {cap}" if cap else "the server's cap"
    print(f"\nburst: {size} POST /api/generate (400 characters each) at once, above {cap_text}")
    ok, busy = out["ok"], out["busy"]
    print(f"  admitted and finished: {len(ok)} (HTTP 200), slowest {max(ok, default=0):.0f} ms")
    print(f"  refused with 503 + Retry-After: {len(busy)}, max latency {max(busy, default=0):.1f} ms"
          f" (target < 100 ms: {'OK' if max(busy, default=0) < 100 else 'OVER'})")
    if out["other"]:
        print(f"  other outcomes: {out['other']}")
    health = out["health"]
    if health:
        worst = max(t for t, _ in health)
        bad = sum(1 for _, s in health if s != 200)
        print(f"  /api/health meanwhile: {len(health)} polls, max {worst:.1f} ms, {bad} not 200")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.loadtest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--url", help="test a running server instead of starting one (loopback recommended)")
    parser.add_argument("--pid", type=int, help="with --url: the server's process id, to read its memory")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--cap", type=int, default=Settings.model_fields["max_concurrent_requests"].default,
                        help="max_concurrent_requests of the server started here (default: the setting's default)")
    parser.add_argument("--burst", type=int, default=0, help="size of the burst (default 3 x cap; 0 = default)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    proc = None
    with tempfile.TemporaryDirectory() as tmp:
        if args.url:
            url, pid, cap = args.url.rstrip("/"), args.pid, None
        else:
            proc, url = start_server(args.models_dir, ["--max-concurrent-requests", str(args.cap)],
                                     log=Path(tmp) / "server.log")
            pid, cap = proc.pid, args.cap
            print(f"server: {url} (pid {pid}, models {args.models_dir}, max_concurrent_requests {cap})")
        try:
            stats, rss = asyncio.run(classroom(url, args.students, args.seconds, pid, args.seed))
            report(stats, rss, args.students, args.seconds)
            size = args.burst or 3 * (cap or 32)
            report_burst(asyncio.run(burst(url, size)), size, cap)
        finally:
            if proc is not None:
                stop_server(proc)
                log = (Path(tmp) / "server.log").read_text()
                if "Traceback" in log:
                    print("\nserver log (tracebacks):\n" + log[-3000:])


if __name__ == "__main__":
    main()
