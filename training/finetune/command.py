"""The fine-tune lab from the command line: what pretraining buys on a small labelled task, raced
fairly against the baselines.

    python -m training finetune --model models --task spelling \
        --arms readout,full,probe,scratch,ngram --sizes 8,32,128,all --seeds 5 [--out DIR | --no-export]
    python -m training finetune --snapshots models/runs/example-shakespeare-3min --task backwards --sizes all --out DIR
    python -m training finetune --list-tasks          # JSON of the shipped tasks (no torch imported)
    python -m training finetune --check-task FILE     # JSON list of the file's problems ([] = fine); its readout on stderr
    python -m training finetune --task FILE --readout '{"masked": "other"}' --arms readout,ngram
    python -m training finetune --model models --task spaces --time-step   # one JSON line: a step's CPU seconds here

--task is a shipped task's name (training/finetune/tasks.py) or a .jsonl file (app/contract/task_format.py);
`--task capitals --corpus PATH` builds the capitals task from any text. The arms
(training/finetune/runner.py) all get the same labelled examples and the same rule
(training/finetune/loop.py: a validation slice of their own examples chooses every setting: C, the
learning rate, the step, the threshold); --steps N trains the trained arms exactly N steps instead.
`readout` comes first: what the pretrained model knows before any label (its zero-label rule is
size 0 in the results, when the task declares one). How it reads the model is declared: by the shipped
table, a task file's first line ({"readout": {...}}), or --readout JSON, which wins over both (the
vocabulary: app/contract/readouts.py; `none` switches it off). Output, one JSON object per line:

    {"event": "start", "task", "kind": "sequence"|"token", "metric": "accuracy"|"f1", "labels", "arms",
     "sizes", "seeds", "n_train", "n_test", "jobs", "how", "skipped": [{"size"|"arm", "why"}], "notes",
     "majority": {"label", "score", "accuracy", "f1"},
     "estimate": {"seconds", "step_seconds", "small_step_seconds", "start_seconds", "padded_length", "jobs",
                  "workers", "text", "load", "time_left"}}   how long the grid will take here: a step timed
                                      now (training/finetune/step_time.py), app/contract/finetune_cost.py and
                                      the machine's load (app/contract/finetune_load.py)
    {"event": "result", "arm", "size", "seed", "metric", "score", "accuracy" (+ "f1"), "same_answer",
     "n_test", "examples", "validation", "steps", ..., "seconds", "cpu_seconds",
     "time_left": {"seconds", "text", "scale"}}  (+ "model", "step" with --snapshots; no time_left there;
                                      + "units" with --keep-units: per test example right, total, TP, FP, FN,
                                      training/finetune/stats.py, for a bootstrap over the test examples)
                                      the estimate scaled by what the finished jobs took (progress.py)
    {"event": "classifier", "arm", "dir": "classifiers/<arm>", "accuracy", "score", "seconds"}  full, probe and
        scratch at the largest size, seed 0, exported to OUT/classifiers/<arm>/ (training/finetune/export.py)
    {"event": "gpt_way", ...}                         (training/finetune/gpt.py)
    {"event": "summary", ..., "time": {"estimated_seconds", "seconds"}}  (training/finetune/summary.py)
    {"event": "error", "message"}                     then exit status 1 (+ "errors": a malformed task file's list)

Sizes are strings in the summary's keys ("8", "all"). OUT/summary.json keeps the summary. An
exported classifier reads "[CLS] text [SEP]" with token_type_ids 0: a per-character task's logits
have T = len(text) + 2 rows, row i + 1 for character i (classifier.card.json "input" says so).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from app.contract import finetune_cost as cost
from app.contract import finetune_load
from app.contract import readouts
from app.contract.finetune_evidence import plan_sizes  # the one rule, shared with the page's plan

from .tasks import TaskFormatError, list_tasks, load_task

ARMS = ("readout", "full", "probe", "scratch", "ngram")
ALIASES = {"likelihood": "readout"}  # the whole-input readout's old name
EXPORTED, TRAINED = cost.EXPORTED, cost.TRAINED  # the grid's order: cost.grid (cheapest first)
DEFAULT_ARMS = ",".join(ARMS)
DEFAULT_SIZES = "8,32,128,all"
DEFAULT_SEEDS = 5
SMALL_TEST = 30
STARTED = time.time()  # about when this process started (before torch): the summary's "time"


def emit(event: dict) -> None:
    print(json.dumps(event), flush=True)


def readout_arg(text: str):
    """--readout: a declaration in the readout vocabulary (argparse's error names the option)."""
    try:
        return readouts.parse_json(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{e} (a readout is {readouts.EXAMPLE})") from None


def add_finetune_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="models", help="model set folder with bert.onnx (and gpt.onnx for the whole-input readout and GPT's way)")
    p.add_argument("--task", default=None, help="shipped task name (see --list-tasks) or a .jsonl task file")
    p.add_argument("--corpus", default=None, help="with --task capitals: build the task from this text file or folder")
    p.add_argument("--arms", default=DEFAULT_ARMS, help=f"comma-separated among {', '.join(ARMS)}")
    p.add_argument("--readout", type=readout_arg, default=None, metavar="JSON",
                   help="how the readout arm reads the pretrained model's own head, overriding the task's declaration: "
                   '\'{"insert": " "}\', \'{"masked": "other"}\' (+ "positions": "letters"), \'{"masked": "upper"}\' '
                   'for a per-character task, \'{"gpt": LABEL}\' for a whole-input one, or none')
    p.add_argument("--sizes", default=DEFAULT_SIZES, help="labelled examples per fine-tune, comma-separated; 'all' = every training example")
    p.add_argument("--seeds", type=int, default=DEFAULT_SEEDS)
    p.add_argument("--trained-up-to", type=int, default=None, metavar="N",
                   help="run the trained arms (full, scratch) only at sizes up to N; the other arms run every size "
                   "('all' is above any N)")
    p.add_argument("--steps", type=int, default=None, help="train the trained arms exactly N steps (default: the validation slice chooses "
                   "the learning rate and the step)")
    p.add_argument("--threads", type=int, default=1, help="torch threads of the main process")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                   help="where the trained arms (full, scratch) train: auto (default) = a CUDA GPU when PyTorch sees one")
    p.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                   help="processes for the trained arms' fine-tunes (default: 2, or 1 on a 1-core machine)")
    p.add_argument("--out", default=None, help="folder for the exported classifiers and summary.json")
    p.add_argument("--snapshots", default=None, help="a run folder: fine-tune (full arm, first size) from each of its snapshots")
    p.add_argument("--no-export", action="store_true", help="do not export classifiers")
    p.add_argument("--no-gpt", action="store_true", help="skip GPT's way")
    p.add_argument("--keep-units", action="store_true",
                   help="each result line carries its per-test-example counts (a bootstrap over the test examples)")
    p.add_argument("--list-tasks", action="store_true", help="print the shipped tasks as JSON and exit")
    p.add_argument("--check-task", default=None, metavar="FILE", help="print the task file's problems as JSON and exit")
    p.add_argument("--time-step", action="store_true",
                   help="print one JSON line and exit: the CPU seconds of one training step here (forward, backward and "
                   "update of a batch of 16 of the task's training texts, one thread) and of a trainer's start")


def parse_sizes(text: str) -> list:
    sizes = []
    for part in text.split(","):
        part = part.strip()
        if part == "all":
            sizes.append("all")
        elif part.isdigit() and int(part) >= 1:
            sizes.append(int(part))
        else:
            raise ValueError(f"--sizes: {part!r} is not a positive number or 'all'")
    if not sizes or len(set(sizes)) != len(sizes):
        raise ValueError("--sizes: give distinct sizes, e.g. 8,32,128,all")
    return sorted(sizes, key=lambda s: float("inf") if s == "all" else s)


def parse_arms(text: str) -> list[str]:
    arms = [ALIASES.get(a.strip(), a.strip()) for a in text.split(",") if a.strip()]
    bad = [a for a in arms if a not in ARMS]
    if bad or not arms or len(set(arms)) != len(arms):
        raise ValueError(f"--arms: give distinct arms among {', '.join(ARMS)} (got {text!r})")
    return arms


def notes(task) -> list[str]:
    n = len(task.test)
    unit = "text" if task.kind == "sequence" else "held-out text"
    if n < SMALL_TEST:
        return [f"the held-out score rests on {n} test {unit}s only: each one moves it by about {100 / n:.0f} points"]
    return []


def run(args) -> dict:
    import torch

    from app.contract.task_format import heldout_problem

    from .runner import Lab
    from .summary import summarize

    from ..device import resolve as resolve_device

    torch.set_num_threads(max(1, args.threads))
    device = resolve_device(args.device)  # a DeviceError (a ValueError naming --device) without a GPU
    task = load_task(args.task, args.corpus)
    if getattr(args, "readout", None) is not None:  # the command line wins over the file's and the table's
        problem = readouts.fit_problem(args.readout, task.kind, task.labels)
        if problem:
            raise ValueError(f"--readout: {problem}")
        task.meta["readout"] = args.readout
    sizes, arms = parse_sizes(args.sizes), parse_arms(args.arms)
    if args.seeds < 1:
        raise ValueError("--seeds: at least 1")
    problem = heldout_problem(task)
    if problem:
        raise ValueError(f"--task: {problem}")
    if args.snapshots:
        return run_snapshots(args, task, sizes[0])
    lab = Lab(Path(args.model), task, args.steps, args.threads, device)
    sizes, skipped = plan_sizes(sizes, len(task.train), lab.data.min_size())
    for arm in list(arms):
        why = lab.skip_reason(arm)
        if why:
            arms.remove(arm)
            skipped.append({"arm": arm, "why": why})
    if not sizes or not arms:
        raise ValueError("nothing to run: " + "; ".join(f"{s.get('size', s.get('arm'))}: {s['why']}" for s in skipped))
    limit = getattr(args, "trained_up_to", None)
    for size in sizes:
        if limit is not None and (size == "all" or size > limit) and any(a in TRAINED for a in arms):
            skipped.append({"size": size, "arms": [a for a in arms if a in TRAINED],
                            "why": f"the trained arms run only up to {limit} labelled examples (--trained-up-to)"})
    grid = cost.grid(arms, sizes, args.seeds, "readout" in arms and lab.zero_label(), limit)
    export = bool(args.out and not args.no_export)
    if export:
        lab.prepare_export(Path(args.out))
    estimate, progress = time_plan(args, lab, task, arms, sizes, grid, device, export)
    emit({"event": "start", "task": task.name, "kind": task.kind, "metric": lab.metric, "labels": task.labels,
          "arms": arms, "sizes": sizes, "seeds": args.seeds, "n_train": len(task.train), "n_test": len(task.test),
          "device": device, "jobs": len(grid), "how": lab.how(),
          "readout": lab.readout_how() if "readout" in arms else None, "skipped": skipped, "notes": notes(task),
          "majority": lab.majority(), "estimate": estimate})
    outcomes, cpu = [], {a: 0.0 for a in arms}

    def done(model, result, u):
        outcomes.append((result, u))
        cpu[result["arm"]] += result["cpu_seconds"]
        progress.finished(result, time.time())
        emit(result | {"time_left": progress.left(time.time())} | ({"units": u.tolist()} if args.keep_units else {}))
        if (export and model is not None and result["arm"] in EXPORTED and result["size"] == sizes[-1]
                and result["seed"] == 0 and "smaller" not in result.get("model", "")):
            emit(lab.export(model, result, Path(args.out)))
            progress.exported()

    trained = [j for j in grid if j[0] in TRAINED] if args.workers > 1 else []
    if trained:
        from . import pool as finetune_pool

        with finetune_pool.pool(min(args.workers, len(trained)), Path(args.model), task, args.steps, device) as ex:
            futures = [finetune_pool.submit(ex, arm, size, seed, export and size == sizes[-1] and seed == 0)
                       for arm, size, seed in trained]
            for job in grid:
                if job[0] not in TRAINED:
                    done(*lab.job(*job))
            for f in futures:
                result, u, state = f.result()
                done(lab.rebuild(result, state) if state is not None else None, result, u)
    else:
        for job in grid:
            done(*lab.job(*job))
    lab.finish_export()
    gpt = None if args.no_gpt else lab.gpt_way()
    if gpt is not None:
        emit(gpt)
    for arm, extra in lab.setup_cpu.items():
        if arm in cpu:
            cpu[arm] += extra
    return {"event": "summary", "task": task.name, **summarize(outcomes, arms, sizes, lab.metric, lab.majority()),
            "cpu_seconds": {a: round(c, 2) for a, c in cpu.items()}, "device": device, "majority": lab.majority(), "skipped": skipped,
            "gpt_way": gpt, "time": {"estimated_seconds": estimate["seconds"], "seconds": round(time.time() - STARTED, 1)}}


def time_plan(args, lab, task, arms, sizes, grid, device, export):
    """The start line's estimate (a step timed here now, the cost model) and the tracker of the time left."""
    import sklearn.linear_model  # noqa: F401 - the regressions need it: part of a trainer's start, timed with it

    from .progress import Progress
    from .step_time import measure

    timing = measure(lab.bert, lab.data, device)
    step = timing["step_seconds"]
    cores = os.cpu_count() or 1
    busy = finetune_load.load(max(1, args.workers), os.nice(0) if hasattr(os, "nice") else 0)  # this process's nice
    gpt_texts = len(task.test) if not args.no_gpt and task.kind == "sequence" and (lab.folder / "gpt.onnx").exists() else 0
    est = cost.estimate(cost.Shape(task, lab.bert.cfg.context), arms, sizes, args.seeds, step, timing["start_seconds"],
                        zero_label=grid[:1] == [("readout", 0, 0)], workers=args.workers, cores=cores,
                        fixed_steps=args.steps, small=timing["small_step_seconds"] / step if step else None,
                        export=export, gpt_way=bool(gpt_texts), trained_up_to=getattr(args, "trained_up_to", None),
                        busy=busy)
    exports = sum(1 for a in EXPORTED if a in arms) if export else 0
    # the time left starts from the same busy machine: a step's wall time there, not its CPU time
    progress = Progress(grid, est.pop("costs"), step * busy["factor"], workers=args.workers, cores=cores,
                        exports=exports, gpt_texts=gpt_texts, start_seconds=timing["start_seconds"] * busy["factor"],
                        now=time.time())
    return est | {k: timing[k] for k in ("small_step_seconds", "padded_length", "context", "device")} | {
        "time_left": progress.left(time.time())}, progress


def time_step(args) -> dict:
    """--time-step: one step of this task's fine-tune timed here (training/finetune/step_time.py)."""
    import sklearn.linear_model  # noqa: F401 - part of a trainer's start (start_seconds)

    from .runner import Lab
    from .step_time import measure

    from ..device import resolve as resolve_device

    device = resolve_device(args.device)
    task = load_task(args.task, args.corpus)
    lab = Lab(Path(args.model), task, None, 1, device)
    return {"event": "step_time", **measure(lab.bert, lab.data, device), "model": args.model, "task": task.name}


def snapshot_folders(run: Path) -> list[tuple[str, int, Path]]:
    """(name, BERT pretraining step, folder) of each snapshot with a BERT, then the final models."""
    found = []
    for folder in sorted((run / "snapshots").glob("step-*")) + [run / "final"]:
        meta = folder / "snapshot.json"
        if (folder / "bert.onnx").exists() and meta.exists():
            info = json.loads(meta.read_text(encoding="utf-8"))
            found.append((folder.name, int(info.get("steps", {}).get("bert", info.get("step", 0))), folder))
    if not found:
        raise FileNotFoundError(f"--snapshots: no snapshots with a BERT in {run}")
    return found


def run_snapshots(args, task, size) -> dict:
    from .runner import Lab
    from .summary import by_step, summarize

    run_dir = Path(args.snapshots)
    found = snapshot_folders(run_dir)
    metric = "accuracy" if task.kind == "sequence" else "f1"
    emit({"event": "start", "task": task.name, "kind": task.kind, "metric": metric, "labels": task.labels,
          "arms": ["full"], "sizes": [size], "seeds": args.seeds, "n_train": len(task.train), "n_test": len(task.test),
          "jobs": len(found) * args.seeds, "snapshots": [{"model": n, "step": s} for n, s, _ in found]})
    outcomes = []
    for name, step, folder in found:
        lab = Lab(folder, task, args.steps, args.threads)
        for seed in range(args.seeds):
            _, result, u = lab.job("full", size, seed)
            result |= {"model": name, "step": step}
            outcomes.append((result, u))
            emit(result)
    return {"event": "summary", "task": task.name, "run": run_dir.name, "size": size,
            "by_step": by_step(outcomes, metric), **summarize(outcomes, ["full"], [size], metric), "gpt_way": None}


def cli(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training finetune", description=__doc__.split("\n\n")[0])
    add_finetune_args(p)
    args = p.parse_args(argv)
    if args.list_tasks:
        print(json.dumps(list_tasks(), indent=1))
        return 0
    if args.check_task:
        from app.contract.task_format import check_task

        data = Path(args.check_task).read_bytes()
        problems = check_task(data)
        print(json.dumps(problems, indent=1))
        if not problems:  # what the file declares its readout to be, for a person (stdout stays the JSON list)
            from app.contract.task_format import parse_task

            task = parse_task(data)
            where = "readout (declared on its first line)" if "readout" in task.meta else "readout (nothing declared)"
            print(f"{where}: {readouts.words(task.meta.get('readout'), task.kind)}", file=sys.stderr)
        return 1 if problems else 0
    try:
        if not args.task:
            raise ValueError("--task: give a shipped task's name or a .jsonl file (see --list-tasks)")
        if args.time_step:
            emit(time_step(args))
            return 0
        summary = run(args)
        if args.out:
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            tmp = out / "summary.json.tmp"
            tmp.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
            tmp.replace(out / "summary.json")
        emit(summary)
        return 0
    except (TaskFormatError, ValueError, FileNotFoundError, RuntimeError, OSError) as e:
        emit({"event": "error", "message": str(e)} | ({"errors": e.errors} if isinstance(e, TaskFormatError) else {}))
        return 1
    except Exception as e:  # anything else still ends with an error line the app can show
        emit({"event": "error", "message": f"{type(e).__name__}: {e}"})
        return 1


def main() -> None:
    sys.exit(cli())


if __name__ == "__main__":
    main()
