"""Where the fine-tune cost model's constants come from (app/contract/finetune_cost.py COST): each
job's measured cost in steps (its CPU-seconds / the step time measured in the same run) beside the
model's, and the constant that would make them agree.

    python benchmarks/finetune_cost.py --task FILE_OR_NAME --jobs full:8:0,scratch:all:0,probe:8:0
        times a step (training/finetune/step_time.py), then runs each job one at a time in this
        process (one thread, as a worker does) and prints the figures
    python benchmarks/finetune_cost.py --results models/finetune_results/NAME.jsonl [--step-seconds S]
        the same from a result file: its start line's estimate (step_seconds, the trainer's own
        measurement) or S (`python -m training finetune --model M --task T --time-step` on the
        machine that ran it)

For each arm and size: the jobs, the median measured steps, the model's steps and their ratio; for
the trained arms the checks per run that fit at that validation slice (COST["checks"]: set each
entry to the median over a grid's jobs); for the cheap arms the per-job fit cost (COST["fit"]).
No timing is asserted anywhere: these are figures to read, and to set the table from.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from app.contract import finetune_cost as cost  # noqa: E402


def checks_that_fit(shape, arm: str, size, measured: float, small: float | None) -> tuple[int, float]:
    """(the validation slice's texts, the checks per run there that make the model say `measured` steps)."""
    val = cost.split_sizes(shape, cost.chosen(shape, size))[1]
    saved = dict(cost.COST["checks"][arm])
    lo, hi = 0.5, 200.0
    try:
        for _ in range(40):
            mid = (lo + hi) / 2
            cost.COST["checks"][arm] = {val: mid}
            if cost.trained_steps(shape, arm, size, small=small) < measured:
                lo = mid
            else:
                hi = mid
    finally:
        cost.COST["checks"][arm] = saved
    return val, round((lo + hi) / 2, 1)


def report(shape, results: list[dict], step: float, small: float | None) -> None:
    jobs = [(r["arm"], r["size"], r["seed"]) for r in results]
    model = dict(zip(jobs, cost.job_steps(shape, jobs, small=small)))
    print(f"step {step:.4g} s (small model x{small or cost.COST['small']:.3g}); padded length {shape.padded:.1f}; "
          f"{shape.n_train} training, {shape.n_test} test texts")
    print(f"{'arm':8} {'size':>5} {'jobs':>4} {'CPU s':>7} {'measured':>9} {'model':>8} {'ratio':>6}  constant that fits")
    groups: dict = {}
    for r in results:
        groups.setdefault((r["arm"], r["size"]), []).append(r)
    for (arm, size), rs in groups.items():
        measured = statistics.median(r["cpu_seconds"] / step for r in rs)
        predicted = statistics.median(model[(r["arm"], r["size"], r["seed"])] for r in rs)
        if arm in cost.TRAINED:
            val, checks = checks_that_fit(shape, arm, size, measured, small)
            fits = f"checks per run {checks} (slice of {val})"
        else:
            later = [r["cpu_seconds"] / step for r in rs[1:]] or [measured]
            fits = f"fit {statistics.median(later):.2f} steps a job" + (" (first job: with the one pass)" if len(rs) == 1 else "")
        print(f"{arm:8} {str(size):>5} {len(rs):4d} {statistics.median(r['cpu_seconds'] for r in rs):7.2f} "
              f"{measured:9.1f} {predicted:8.1f} {measured / predicted if predicted else 0:6.2f}  {fits}")


def from_results(path: Path, step: float | None) -> None:
    from training.finetune.tasks import load_task

    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    start = next(e for e in lines if e.get("event") == "start")
    est = start.get("estimate") or {}
    step = step or est.get("step_seconds")
    if not step:
        raise SystemExit("no step time: this file's start line has no estimate; give --step-seconds "
                         "(python -m training finetune --model M --task T --time-step)")
    small = est["small_step_seconds"] / est["step_seconds"] if est.get("small_step_seconds") else None
    shape = cost.Shape(load_task(start["task"]), est.get("context", 128))
    report(shape, [e for e in lines if e.get("event") == "result" and e.get("size") is not None], step, small)


def in_process(model: str, task_name: str, jobs: list[str]) -> None:
    import torch

    from training.finetune.runner import Lab
    from training.finetune.step_time import measure
    from training.finetune.tasks import load_task

    torch.set_num_threads(1)
    task = load_task(task_name)
    lab = Lab(Path(model), task, None, 1)
    timing = measure(lab.bert, lab.data)
    print(json.dumps(timing))
    results = []
    for spec in jobs:
        arm, size, seed = spec.split(":")
        _, r, _ = lab.job(arm, size if size == "all" else int(size), int(seed))
        results.append(r)
        print(json.dumps({k: r.get(k) for k in ("arm", "size", "seed", "cpu_seconds", "steps", "best_step",
                                                 "rates_tried", "examples", "validation")}), flush=True)
    report(cost.Shape(task, lab.bert.cfg.context), results, timing["step_seconds"],
           timing["small_step_seconds"] / timing["step_seconds"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="models")
    p.add_argument("--task", default=None, help="a shipped task's name or a task file (with --jobs)")
    p.add_argument("--jobs", default="full:8:0,scratch:8:0,probe:8:0,ngram:8:0", help="arm:size:seed,...")
    p.add_argument("--results", default=None, help="a result file (models/finetune_results/*.jsonl or a run's events)")
    p.add_argument("--step-seconds", type=float, default=None)
    a = p.parse_args()
    t0 = time.time()
    if a.results:
        from_results(Path(a.results), a.step_seconds)
    elif a.task:
        in_process(a.model, a.task, a.jobs.split(","))
    else:
        p.error("give --task (and --jobs) or --results")
    print(f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
