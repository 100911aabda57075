"""How long the quick test loop takes here (prints figures; the 2-minute goal is a benchmark's, never a test's):

    python -m benchmarks.quick_loop                  # the README's quick loop, timed (the tiny models built first)
    python -m benchmarks.quick_loop --cold           # the same, the tiny models' cache cleared first
    python -m benchmarks.quick_loop --slowest 20     # and the 20 slowest tests

The quick loop is `python -m pytest -q -m "not slow and not browser"` (README, Tests). The tiny
models most app tests serve are built once per version of the code that makes them and kept in
pytest's cache (tests/conftest.py `tiny_build_dir`): unless --cold, a first, untimed pytest call
makes sure they are there (building them is timed apart: "tiny_models_s"), so the figure is the
loop as a developer runs it again and again. Run it as you would the loop (pinned with taskset,
niced): the cores it may use, the CPU and the load average before and after are printed with it,
since a shared machine's figure is not a quiet one's; "cpu_seconds" (user + system time of pytest
and the processes it started) is what the loop costs whatever else the machine does.
"failed" in "counts" and a non-zero exit: the loop failed (the last lines of its output are printed)."""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUICK = ["-m", "not slow and not browser"]
SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|deselected|error|errors|xfailed|xpassed)")
DURATION = re.compile(r"^\s*([0-9.]+)s (call|setup|teardown)\s+(\S+)", re.M)


def pytest(args: list[str]) -> tuple[float, float, str, int]:
    """(wall seconds, CPU seconds of pytest and the processes it waited for, output, exit code)."""
    t0, before = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *args], cwd=REPO,
                          capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.monotonic() - t0, cpu_s, proc.stdout + proc.stderr, proc.returncode


def cpu() -> dict:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), None) if Path("/proc/cpuinfo").exists() else None
    return {"model": model, "cores_here": len(os.sched_getaffinity(0)), "cores_machine": os.cpu_count()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cold", action="store_true", help="clear pytest's cache first (the tiny models are rebuilt, timed)")
    p.add_argument("--slowest", type=int, default=10, help="how many of the slowest tests to list")
    args = p.parse_args(argv)
    out: dict = {"command": "python -m pytest -q -m \"not slow and not browser\"", "cpu": cpu(),
                 "load_before": os.getloadavg()}
    extra = ["--cache-clear"] if args.cold else []
    if not args.cold:  # the tiny models, built (or found) by the one test file that needs nothing else
        out["tiny_models_s"] = round(pytest(["tests/test_tiny_models.py"])[0], 1)
    seconds, cpu_s, text, code = pytest([*QUICK, *extra, f"--durations={args.slowest}"])
    counts = {kind: int(n) for n, kind in SUMMARY.findall(text.strip().splitlines()[-1] if text.strip() else "")}
    out.update({"seconds": round(seconds, 1), "cpu_seconds": round(cpu_s, 1), "exit_code": code, "counts": counts,
                "slowest": [{"s": float(s), "phase": ph, "test": t} for s, ph, t in DURATION.findall(text)][:args.slowest],
                "load_after": os.getloadavg(), "goal_s": 120, "goal_cores": 2})
    if code != 0:
        out["tail"] = text.strip().splitlines()[-15:]
    print(json.dumps(out, indent=1))
    return 0 if code == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
