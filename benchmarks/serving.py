"""Serving benchmark: `python -m benchmarks.serving [--models-dir models] [--with-training]`. Prints
figures, asserts nothing.

1. GPT at full context, in process: the KV-cached sampler vs recomputing a full forward of the
   last `context` characters for every new character, and the speed-up.
2. In process, one request at a time: the cost of each endpoint of a class's mix (the endpoint
   function itself: validation, model, JSON) and the mix's mean; the ideal rate is cores / mean.
3. Against a live server (a `python -m app` subprocess on 127.0.0.1): streaming speed end to end,
   then an OPEN-LOOP load: Poisson arrivals of the mix (60 % mask-fill, 20 % next-token, 10 %
   generate 50 characters, 10 % NSP) at rising rates, each request sent at its time whatever the
   others are doing, as a class does. Per rate and endpoint: p50/p99 and refusals. "Class
   capacity" is the highest rate at which every endpoint's p99 stays <= 250 ms with nothing
   refused; it is printed as a fraction of the ideal rate. (A closed loop of N connections
   cannot show this: by Little's law it only measures N / throughput.)
4. With --with-training: the mix at --training-rate, without and then with a training run
   (`nice -n 10 python -m training ...`) on the same machine, and the p99 ratio.
5. Server memory (VmRSS) at start, after the load, and after a burst of 200 streams.

The load generator runs in its own process at niceness +10 (below the server), so that on a
machine with few cores its CPU use does not show up as server latency.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from .common import (NICE, RawConnection, percentile, rss_mb, run_niced, server_pids, start_server,
                           stop_server)
from app.config import REPO, Settings
from app.contract import FIRST_CHAR, MASK_MARKER
from app.registry import ModelSet as Models, read_meta
from app.runtime import Runtime, cores
from app.sampling import draw, sampling_distribution

SAMPLE = ("Now is the winter of our discontent made glorious summer by this sun of York; and all the "
          "clouds that lour'd upon our house in the deep bosom of the ocean buried. ")
TARGET_P99_MS = 250.0
# (label, path, share of the arrivals)
MIX = [("mask-fill", "/api/mask-fill", 0.6), ("next-token", "/api/next-token", 0.2),
       ("generate", "/api/generate", 0.1), ("nsp", "/api/nsp/predict", 0.1)]


def text_of(models: Models, n: int) -> str:
    """n characters of English-like text in the model's vocabulary (unknown ones dropped)."""
    known = "".join(ch for ch in SAMPLE if ch in models.vocab.stoi) or models.vocab.chars[0]
    return (known * (n // len(known) + 1))[:n]


def bench_gpt(models: Models, chars: int, recompute_chars: int, rounds: int = 5) -> float:
    gpt = models.gpt
    ctx = gpt.context
    prompt, _ = models.vocab.encode(text_of(models, ctx))
    for _ in gpt.generate(prompt, 3, 1.0, 0, 1.0, 0):  # warm up (first runs allocate)
        pass
    speeds = []
    for r in range(rounds):  # the median of several rounds: this machine's speed drifts
        t = time.perf_counter()
        for _ in gpt.generate(prompt, chars, 1.0, 0, 1.0, r):
            pass
        speeds.append(chars / (time.perf_counter() - t))
    cached = float(np.median(speeds))

    rng = np.random.default_rng(0)
    seq = list(prompt)
    t = time.perf_counter()
    for _ in range(recompute_chars):
        logits = gpt.logits(seq[-ctx:])[-1]
        dist = sampling_distribution(logits[FIRST_CHAR:], 1.0, 0, 1.0)
        seq.append(FIRST_CHAR + draw(dist, rng.random()))
    recompute = recompute_chars / (time.perf_counter() - t)
    print(f"GPT (context {ctx}), in process, one stream:")
    print(f"  KV-cached sampler     {cached:9.0f} chars/s  (median of {rounds} x {chars} chars, range {min(speeds):.0f}-{max(speeds):.0f}; "
          f"re-prefill every {ctx // 2})  target >= 3000")
    print(f"  recompute every char  {recompute:9.0f} chars/s  (full forward of {ctx} chars per char)")
    print(f"  cached / recompute    {cached / recompute:9.1f} x   target >= 15x")
    return cached


def mix_bodies(models: Models) -> dict[str, dict]:
    """One request body per endpoint of the mix, in the model's vocabulary."""
    n = max(4, min(100, models.bert.context - 2))
    text = text_of(models, n)
    mid = n // 2
    half = max(1, min(50, (models.bert.context - 3) // 2))
    return {
        "mask-fill": {"text": text[:mid] + MASK_MARKER + text[mid + 1:], "top_k": 8},
        "next-token": {"prompt": text_of(models, 60), "temperature": 0.8},
        "generate": {"prompt": text_of(models, 40), "max_new_tokens": 50, "temperature": 0.8, "seed": 1},
        "nsp": {"a": text_of(models, half), "b": text_of(models, half + 7)[7:]},
    }


def bench_costs(models_dir: Path, bodies: dict[str, dict], calls: int) -> dict[str, float]:
    """Seconds per request of each endpoint function, in process, one at a time (median)."""
    from app.main import load_registry
    from app.routers import generation, mask_fill, nsp
    from app.schemas import GenerateRequest, MaskFillRequest, NextTokenRequest, NSPRequest

    registry = load_registry(Settings(models_dir=models_dir))
    endpoints = {
        "mask-fill": lambda: mask_fill.mask_fill(MaskFillRequest(**bodies["mask-fill"]), registry),
        "next-token": lambda: generation.next_token(NextTokenRequest(**bodies["next-token"]), registry),
        "generate": lambda: generation.generate(GenerateRequest(**bodies["generate"]), registry),
        "nsp": lambda: nsp.predict(NSPRequest(**bodies["nsp"]), registry),
    }
    costs = {}
    for label, call in endpoints.items():
        for _ in range(3):
            call()
        times = []
        for _ in range(calls):
            t = time.perf_counter()
            call()
            times.append(time.perf_counter() - t)
        costs[label] = float(np.median(times))
    mean = sum(share * costs[label] for label, _, share in MIX)
    print(f"In process, one request at a time (median of {calls}):")
    for label, _, share in MIX:
        print(f"  {label:<11} {costs[label] * 1000:7.2f} ms   ({share:.0%} of the mix)")
    print(f"  mix mean    {mean * 1000:7.2f} ms   ideal rate = {cores()} cores / mean = {cores() / mean:.0f} req/s")
    costs["mean"] = mean
    return costs


def bench_stream(base: str, prompt: str, chars: int) -> None:
    params = {"prompt": prompt, "max_new_tokens": chars, "temperature": 1.0, "seed": 1}
    with httpx.Client(timeout=60) as client:
        client.get(f"{base}/api/generate/stream", params={**params, "max_new_tokens": 5}).read()  # warm up
        t = time.perf_counter()
        got, events, first = 0, 0, None
        with client.stream("GET", f"{base}/api/generate/stream", params=params) as r:
            for line in r.iter_lines():
                if line.startswith("data: "):
                    data = json.loads(line[6:])
                    if "steps" in data:
                        first = first or time.perf_counter() - t
                        got += len(data["steps"])
                        events += 1
        dt = time.perf_counter() - t
    print(f"Streaming over HTTP (GET /api/generate/stream, {chars} chars, prompt {len(prompt)} chars):")
    print(f"  {got / dt:9.0f} chars/s end to end  ({events} events, first after {first * 1000:.0f} ms)  target >= 1000")


# ---- the open-loop load (runs in the niced load process)
async def _open_loop(url: str, bodies: dict[str, bytes], rate: float, seconds: float, seed: int) -> dict:
    rng = random.Random(seed)
    labels = [label for label, _, _ in MIX]
    paths = {label: path for label, path, _ in MIX}
    weights = [share for _, _, share in MIX]
    idle: list[RawConnection] = [await RawConnection(url).open() for _ in range(16)]
    results: dict[str, list] = {label: [] for label in labels}
    refused: dict[str, int] = dict.fromkeys(labels, 0)
    late: list[float] = []

    async def one(label: str, due: float) -> None:
        late.append((time.perf_counter() - due) * 1000)
        for attempt in range(2):  # an idle connection the server closed meanwhile: once more on a new one
            conn = idle.pop() if idle and not attempt else await RawConnection(url).open()
            try:
                status, ms, _ = await conn.request("POST", paths[label], bodies[label])
                break
            except ConnectionResetError:
                conn.close()
            except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
                refused[label] += 1
                conn.close()
                return
        else:
            refused[label] += 1
            return
        idle.append(conn)
        if status == 200:
            results[label].append(ms)
        else:
            refused[label] += 1

    tasks = []
    start = time.perf_counter()
    due = start
    while True:
        due += rng.expovariate(rate)  # Poisson arrivals: exponential gaps
        if due - start > seconds:
            break
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        tasks.append(asyncio.create_task(one(rng.choices(labels, weights)[0], due)))
    await asyncio.gather(*tasks)
    for conn in idle:
        conn.close()
    return {"latency": results, "refused": refused, "late_p99": percentile(late, 99),
            "sent": len(tasks), "seconds": time.perf_counter() - start}


def open_loop(url: str, bodies: dict[str, dict], rate: float, seconds: float, seed: int = 0) -> dict:
    raw = {label: json.dumps(body).encode() for label, body in bodies.items()}
    return asyncio.run(_open_loop(url, raw, rate, seconds, seed))


def rate_ok(r: dict) -> bool:
    return not any(r["refused"].values()) and all(
        values and percentile(values, 99) <= TARGET_P99_MS for values in r["latency"].values())


def print_rate(rate: float, r: dict) -> None:
    cells = []
    for label, _, _ in MIX:
        values = r["latency"][label]
        cells.append(f"{label} {percentile(values, 50):6.1f}/{percentile(values, 99):6.1f}"
                     + (f" ({r['refused'][label]} refused)" if r["refused"][label] else ""))
    print(f"  {rate:5.0f} req/s  " + "  ".join(cells) + f"  | sent late p99 {r['late_p99']:.1f} ms"
          + ("" if rate_ok(r) else "  OVER"))


def bench_open_loop(url: str, bodies: dict, rates: list[float], seconds: float, ideal: float) -> None:
    print(f"Open-loop mixed load (Poisson arrivals, {seconds:g} s per rate; p50/p99 ms per endpoint; "
          f"load generator at niceness +{NICE}):")
    run_niced(open_loop, url, bodies, 5.0, 2.0)  # warm up, not counted
    capacity, at_capacity, failed = 0.0, None, 0
    for rate in rates:
        r = run_niced(open_loop, url, bodies, rate, seconds, int(rate))
        print_rate(rate, r)
        if rate_ok(r):
            capacity, at_capacity, failed = rate, r, 0
        else:
            failed += 1
            if failed == 2:  # two rates in a row over the target (one can be a blip of a shared machine)
                break
    if not at_capacity:
        print(f"  class capacity: none of the rates kept every p99 <= {TARGET_P99_MS:.0f} ms")
        return
    gen, mask = (percentile(at_capacity["latency"][k], 99) for k in ("generate", "mask-fill"))
    print(f"  class capacity {capacity:.0f} req/s (every endpoint's p99 <= {TARGET_P99_MS:.0f} ms, none refused) = "
          f"{capacity / ideal:.0%} of the ideal {ideal:.0f} req/s  target >= 60 %")
    print(f"  at capacity: generate p99 {gen:.1f} ms = {gen / mask:.1f} x mask-fill's {mask:.1f} ms  target <= 3x")


def start_training(out: Path) -> subprocess.Popen:
    """A training run beside the server, as the live-training page starts one (training/live/'s protocol)."""
    help_text = subprocess.run([sys.executable, "-m", "training", "--help"], cwd=str(REPO),
                               capture_output=True, text=True).stdout
    if " live" in help_text or "{live" in help_text or ",live" in help_text:
        args = ["live", "--out", str(out), "--families", "gpt,bert", "--minutes", "2", "--threads", "1"]
    else:  # before `training live` exists: one family
        args = ["train", "gpt", "--minutes", "2", "--threads", "1", "--out", str(out)]
    cmd = ["nice", "-n", str(NICE), sys.executable, "-m", "training", *args]
    print(f"  training: {' '.join(cmd[3:])} (at niceness +{NICE})")
    return subprocess.Popen(cmd, cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def bench_with_training(url: str, bodies: dict, rate: float, seconds: float) -> None:
    print(f"Open-loop mixed load at {rate:g} req/s, without and with a training run ({seconds:g} s each):")
    without = run_niced(open_loop, url, bodies, rate, seconds, 1)
    print_rate(rate, without)
    with tempfile.TemporaryDirectory() as tmp:
        trainer = start_training(Path(tmp) / "run")
        try:
            time.sleep(15)  # past torch's import and the first steps: measure while it trains
            if trainer.poll() is not None:
                print(f"  the training run ended early (exit code {trainer.returncode}); no comparison")
                return
            with_run = run_niced(open_loop, url, bodies, rate, seconds, 1)
            still = trainer.poll() is None
        finally:
            trainer.terminate()
            try:
                trainer.wait(15)
            except subprocess.TimeoutExpired:
                trainer.kill()
    print_rate(rate, with_run)
    if not still:
        print("  (the training run ended during the measurement)")
    for label, _, _ in MIX:
        a, b = percentile(without["latency"][label], 99), percentile(with_run["latency"][label], 99)
        print(f"  {label:<11} p99 {a:6.1f} ms without, {b:6.1f} ms with a run: {b / a:4.1f} x  target <= 2x")


async def _burst(url: str, n: int, chars: int) -> int:
    async def one(i: int) -> int:
        conn = await RawConnection(url).open()
        try:
            return (await conn.request("GET", f"/api/generate/stream?prompt=The%20king&max_new_tokens={chars}&seed={i}"))[0]
        finally:
            conn.close()

    return sum(s == 200 for s in await asyncio.gather(*(one(i) for i in range(n))))


def burst(url: str, n: int, chars: int) -> int:
    return asyncio.run(_burst(url, n, chars))


def print_rss(when: str, pid: int) -> None:
    for p in server_pids(pid):
        print(f"  {when:<28} pid {p}: {rss_mb(p):6.1f} MB  target <= 150 MB per worker")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.serving", description=__doc__.split("\n")[0])
    p.add_argument("--models-dir", type=Path, default=Settings().models_dir)
    p.add_argument("--chars", type=int, default=1000, help="characters for the cached sampler and the stream")
    p.add_argument("--recompute-chars", type=int, default=100, help="characters for the recompute loop")
    p.add_argument("--calls", type=int, default=100, help="in-process calls per endpoint")
    p.add_argument("--rates", default="20,40,60,80,100,120,140,160,180,200,240,280",
                   help="open-loop arrival rates, req/s (the sweep stops after two rates in a row over the target)")
    p.add_argument("--seconds", type=float, default=10.0, help="duration of each open-loop rate")
    p.add_argument("--with-training", action="store_true", help="also measure the mix with a training run beside")
    p.add_argument("--training-rate", type=float, default=20.0)
    p.add_argument("--burst", type=int, default=200, help="streams at once for the memory figure (0 = none)")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    models = Models.load(read_meta(args.models_dir), Runtime(args.threads))
    if models.gpt is None or models.bert is None:
        sys.exit(f"cannot benchmark: models missing or broken in {args.models_dir}: {models.problems}")
    print(f"models: {args.models_dir}  cores: {cores()}  onnxruntime threads: {args.threads}  workers: {args.workers}")
    bench_gpt(models, args.chars, args.recompute_chars)
    bodies = mix_bodies(models)
    prompt = text_of(models, models.gpt.context)
    del models
    costs = bench_costs(args.models_dir, bodies, args.calls)
    ideal = cores() / costs["mean"]
    server, url = start_server(args.models_dir, ["--workers", str(args.workers), "--threads", str(args.threads)])
    try:
        print("Server memory (VmRSS):")
        print_rss("at start", server.pid)
        bench_stream(url, prompt, args.chars)
        bench_open_loop(url, bodies, [float(r) for r in args.rates.split(",") if r], args.seconds, ideal)
        if args.with_training:
            bench_with_training(url, bodies, args.training_rate, args.seconds)
        print("Server memory (VmRSS):")
        print_rss("after the open-loop load", server.pid)
        if args.burst:
            ok = run_niced(burst, url, args.burst, 200)
            time.sleep(2)
            print_rss(f"2 s after {args.burst} streams ({ok} ok)", server.pid)
    finally:
        stop_server(server)


if __name__ == "__main__":
    main()
