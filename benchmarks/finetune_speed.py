"""How fast the fine-tune lab answers, run the way the app runs it (a subprocess printing JSON lines):

    python benchmarks/finetune_speed.py [--model models] [--task spelling] [--threads 1] [-- more finetune flags]
    python benchmarks/finetune_speed.py --handoff [--lines 20]   # the class hand-off: its grid, stated against measured
    python benchmarks/finetune_speed.py --results        # CPU and wall time of the committed result files

Prints, for the default grid (every arm: readout, full, probe, scratch, ngram x sizes 8, 32, 128,
all x 5 seeds, every setting chosen on the validation slice): seconds from start to the first point, to the whole grid, and
from each exported classifier's fine-tune to its being playable (its folder renamed into place),
plus the CPU-seconds the fine-tune process used, per arm as the trainer's summary counts them
(setup included: the probe's frozen features, the readout's pass over every example). On a shared
machine wall-clock time depends on the neighbours; CPU time much less.

--handoff runs the class hand-off as the page starts it (issue 42 must 3): 20 labelled lines of the
sentiment sentences (--lines), the hand-off's grid (app/contract/finetune_cost.py HANDOFF: every arm,
sizes 8 and all, 3 seeds), exported classifiers and GPT's way as the server runs it, and prints the
time the page states before Start (the server's own estimate: a step timed by `--time-step`, as the
server has it measured, and app/finetunes/plan.py) beside the measured wall time, and their ratio.
Goal: they differ by less than half, and the grid ends within 180 s on 2 idle cores.

--handoff --busy N (issue 52 must 4) starts N busy processes beside it first (`python -c "while True:
pass"`, at --busy-nice, default 0, killed at the end) and waits --settle seconds (default 5) for them to run, then states
and runs as above: the stated time counts the others in the run queue (app/contract/finetune_load.py).
The grid runs at this script's nice (the server's trainer runs at run_nice, which the server's plan
counts the same way); the others counted at the statement and the load average at the end are printed.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # training/ when run as a script


def measure(model: str, task: str, threads: int, extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "training", "finetune", "--model", model, "--task", task, "--threads", str(threads),
               "--out", out, *extra]
        t0 = time.time()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO,
                                env=os.environ | {"PYTHONPATH": str(REPO)})
        seen, last_result = [], {}
        for line in proc.stdout:
            event = json.loads(line)
            event["t"] = time.time() - t0
            seen.append(event)
            if event["event"] == "result":
                last_result[event["arm"]] = event["t"]
            if event["event"] == "classifier":
                event["playable_after_s"] = round(event["t"] - last_result[event["arm"]], 2)
        proc.wait()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    results = [e for e in seen if e["event"] == "result"]
    if proc.returncode != 0 or not results:
        raise SystemExit(f"fine-tune failed: {seen[-1] if seen else 'no output'}")
    return {
        "command": " ".join(cmd[1:]),
        "jobs": len(results),
        "first_point_s": round(results[0]["t"], 2),
        "grid_s": round(results[-1]["t"], 2),
        "total_s": round(seen[-1]["t"], 2),
        "cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 1),
        "job_cpu_s_by_arm": {a: round(sum(r["cpu_seconds"] for r in results if r["arm"] == a), 1)
                             for a in dict.fromkeys(r["arm"] for r in results)},
        "summary_cpu_s_by_arm": seen[-1].get("cpu_seconds") if seen[-1]["event"] == "summary" else None,
        "mean_steps": seen[-1].get("steps") if seen[-1]["event"] == "summary" else None,
        "classifier_playable_after_fine_tune_s": {e["arm"]: e["playable_after_s"] for e in seen if e["event"] == "classifier"},
        "load_average_at_end": os.getloadavg(),
        "trainer_estimate_s": (seen[0].get("estimate") or {}).get("seconds"),
    }


def handoff_task(folder: Path, lines: int = 20) -> Path:
    """A class's pooled labels as the class page hands them over: `lines` sentences of the sentiment
    task, labels alternating, no split (the server's seeded split decides)."""
    from training.finetune.tasks import load_task

    task = load_task("sentiment")
    pos = [e for e in task.train if e.label == "positive"]
    neg = [e for e in task.train if e.label == "negative"]
    rows = [ex for pair in zip(pos, neg) for ex in pair][:lines]
    path = folder / "class-labels.jsonl"
    path.write_text("".join(json.dumps({"text": e.text, "label": e.label}) + "\n" for e in rows), encoding="utf-8")
    return path


def busy_processes(n: int, nice: int = 0) -> list[subprocess.Popen]:
    """n processes that want a core all the time, at `nice`, as a neighbour's work would."""
    code = f"import os; os.nice({nice})\nwhile True: pass"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]


def handoff(model: str, threads: int, lines: int, busy: int = 0, settle: float = 5.0, busy_nice: int = 0) -> None:
    """The page's stated time for the hand-off (beside `busy` busy processes), then the hand-off run and timed."""
    hogs = busy_processes(busy, busy_nice)
    try:
        if hogs:
            time.sleep(settle)
        _handoff(model, threads, lines, f"{busy}{f' (at nice {busy_nice})' if busy and busy_nice else ''}")
    finally:
        for h in hogs:  # only the processes this script started, each by its own handle
            h.kill()
            h.wait()


def _handoff(model: str, threads: int, lines: int, busy: str) -> None:
    from app.contract.finetune_cost import HANDOFF
    from app.contract.finetune_evidence import plan as make_plan
    from app.contract.task_format import parse_task
    from app.finetunes.plan import arms_that_run, estimate

    with tempfile.TemporaryDirectory() as tmp:
        path = handoff_task(Path(tmp), lines)
        timing = json.loads(subprocess.run([sys.executable, "-m", "training", "finetune", "--model", model, "--task",
                                            str(path), "--time-step"], capture_output=True, text=True, cwd=REPO,
                                           check=True).stdout.splitlines()[-1])
        task = parse_task(path.read_text(encoding="utf-8"), "uploaded")
        sizes = make_plan(task, HANDOFF["sizes"])["sizes"]
        arms, _ = arms_that_run(task, HANDOFF["arms"], None, (Path(model) / "gpt.onnx").exists())
        stated = estimate(task, sizes, arms, HANDOFF["seeds"], None, Path(model), timing, None,
                          nice=os.nice(0))  # the grid below runs at this script's nice
        r = measure(model, str(path), threads, ["--arms", ",".join(HANDOFF["arms"]),
                                                "--sizes", ",".join(map(str, HANDOFF["sizes"])),
                                                "--seeds", str(HANDOFF["seeds"])])
    print(json.dumps({"stated": stated, "timing": timing} | r, indent=1))
    ratio = r["total_s"] / stated["seconds"]
    print(f"hand-off ({lines} lines; {HANDOFF}): stated before Start {stated['seconds']:.0f} s, \"{stated['text']}\"; "
          f"measured {r['total_s']:.0f} s from launch to summary (ratio {ratio:.2f}: "
          f"{'within' if 0.5 < ratio < 1.5 else 'NOT within'} half; the trainer's own estimate at its start "
          f"{r['trainer_estimate_s']} s); CPU {r['cpu_s']} s; {busy} busy processes beside it; "
          f"others in the run queue when stated {stated['load']['load']:.1f} ({stated['load']['weighted']:.1f} at their nice; "
          f"slowdown counted {stated['load']['factor']:.2f}), 1-minute load average "
          f"{r['load_average_at_end'][0]:.1f} at the end, on {os.cpu_count()} cores")


def from_results() -> None:
    """The committed result files' cost: CPU-seconds per arm and wall seconds of each (one shared core)."""
    from training.finetune.report import RESULTS, read

    for path in sorted(RESULTS.glob("*.jsonl")):
        head, results, summary = read(path)
        wall = sum(r["seconds"] for r in results)
        print(f"{path.stem}: {len(results)} results, CPU-seconds per arm {summary.get('cpu_seconds')}, "
              f"sum of job wall seconds {wall:.0f} ({head['command']})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="models")
    p.add_argument("--task", default="spelling")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--handoff", action="store_true", help="the class hand-off's grid: its stated time and measured time")
    p.add_argument("--lines", type=int, default=20, help="with --handoff: labelled lines of the class file")
    p.add_argument("--results", action="store_true", help="print the committed result files' cost and exit")
    p.add_argument("--busy", type=int, default=0, help="with --handoff: busy processes to start beside it (at --busy-nice)")
    p.add_argument("--busy-nice", type=int, default=0, help="with --busy: their nice (19: work that yields to ours)")
    p.add_argument("--settle", type=float, default=5.0, help="with --busy: seconds to wait for them to run")
    p.add_argument("extra", nargs="*", help="more finetune flags after --, e.g. -- --steps 30")
    a = p.parse_args()
    if a.results:
        from_results()
        return
    if a.handoff:
        handoff(a.model, a.threads, a.lines, a.busy, a.settle, a.busy_nice)
        return
    r = measure(a.model, a.task, a.threads, a.extra)
    print(json.dumps(r, indent=1))
    print(f"first point {r['first_point_s']} s, grid {r['grid_s']} s (goal 180 for the hand-off), classifiers playable "
          f"{r['classifier_playable_after_fine_tune_s']} s after their fine-tune (goal 10); CPU {r['cpu_s']} s "
          f"(per arm {r['summary_cpu_s_by_arm']}); "
          f"load average {r['load_average_at_end'][0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
