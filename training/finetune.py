"""The fine-tune lab from the command line: what pretraining buys on a small labelled task.

    python -m training finetune --model models --task sentiment --arms full,probe,scratch \
        --sizes 8,32,128,all --seeds 3 --out runs/ft-sentiment [--steps N] [--threads N]
    python -m training finetune --snapshots models/runs/example-shakespeare-3min --task sentiment --sizes 32 --out DIR
    python -m training finetune --list-tasks          # JSON of the shipped tasks (no torch imported)
    python -m training finetune --check-task FILE     # JSON list of the file's problems ([] = fine)

--task is a shipped task's name (training/finetune_tasks.py) or a .jsonl file (app/contract/task_format.py);
`--task capitals --corpus PATH` builds the capitals task from any text. Each arm x size x seed is
one fine-tune (training/finetune_loop.py) of the model set's BERT (its weights read back out of
bert.onnx, training/inspect_export.py). Output, one JSON object per line on stdout (the app reads them):

    {"event": "start", "task", "kind": "sequence"|"token", "labels", "arms", "sizes", "seeds",
     "n_train", "n_test", "jobs", "steps", "how"}
    {"event": "result", "arm", "size" (8 | ... | "all"), "seed", "accuracy", "n_test", "examples",
     "seconds", "cpu_seconds"}                        (+ "model", "step" with --snapshots)
    {"event": "classifier", "arm", "dir": "classifiers/<arm>", "accuracy", "seconds"}  the arm at
        the largest size, seed 0, exported to OUT/classifiers/<arm>/ (training/finetune_export.py)
    {"event": "gpt_way", "accuracy" (or null and "why"), "chance", "method", ...}  (training/finetune_gpt.py)
    {"event": "summary", "results": {arm: {size: {"mean", "lo", "hi", "n"}}},
     "difference": {"of": ["full", "scratch"], "by_size": {size: {"mean", "lo", "hi", "n", "seeds"}}},
     "gpt_way": {...}}                                (+ "by_step": [...] with --snapshots)
    {"event": "error", "message"}                     then exit status 1

Sizes are strings in the summary's keys ("8", "all"); intervals are 95 % t-intervals over seeds
(training/finetune_stats.py), the difference paired by seed. OUT/summary.json keeps the summary.

Against the interface agreed with the app (additions only): result events also carry "examples"
(how many labelled examples were used) and "cpu_seconds"; start carries "steps" and "how";
classifier carries "seconds" (its export); with --snapshots the start event lists "snapshots"
and the summary adds "by_step": [{"model", "step", "mean", "lo", "hi", "n"}], "run" and "size";
an error from a malformed task file adds "errors" (app/contract/task_format.py's list). An exported
classifier reads "[CLS] text [SEP]" with token_type_ids 0: a per-character task's logits have
T = len(text) + 2 rows, row i + 1 for character i (classifier.card.json "input" says so).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .finetune_stats import interval, paired_difference
from .finetune_tasks import TaskFormatError, list_tasks, load_task

DEFAULT_SIZES = "8,32,128,all"


def emit(event: dict) -> None:
    print(json.dumps(event), flush=True)


def add_finetune_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="models", help="model set folder with bert.onnx (and gpt.onnx for GPT's way)")
    p.add_argument("--task", default=None, help="shipped task name (see --list-tasks) or a .jsonl task file")
    p.add_argument("--corpus", default=None, help="with --task capitals: build the task from this text file or folder")
    p.add_argument("--arms", default="full,probe,scratch", help="comma-separated: full, probe, scratch")
    p.add_argument("--sizes", default=DEFAULT_SIZES, help="labelled examples per fine-tune, comma-separated; 'all' = every training example")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--steps", type=int, default=None, help="optimizer steps per fine-tune (default training/finetune_loop.py)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default=None, help="folder for the exported classifiers and summary.json")
    p.add_argument("--snapshots", default=None, help="a run folder: fine-tune (full arm, first size) from each of its snapshots")
    p.add_argument("--no-export", action="store_true", help="do not export classifiers")
    p.add_argument("--no-gpt", action="store_true", help="skip GPT's way")
    p.add_argument("--list-tasks", action="store_true", help="print the shipped tasks as JSON and exit")
    p.add_argument("--check-task", default=None, metavar="FILE", help="print the task file's problems as JSON and exit")


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
    from .finetune_model import ARMS  # noqa: PLC0415 (torch): only when fine-tuning

    arms = [a.strip() for a in text.split(",") if a.strip()]
    bad = [a for a in arms if a not in ARMS]
    if bad or not arms or len(set(arms)) != len(arms):
        raise ValueError(f"--arms: give distinct arms among {', '.join(ARMS)} (got {text!r})")
    return arms


def summarize(results: list[dict], arms: list[str], sizes: list) -> dict:
    table = {a: {str(s): interval([r["accuracy"] for r in results if r["arm"] == a and r["size"] == s]) for s in sizes}
             for a in arms}
    out = {"results": table}
    if "full" in arms and "scratch" in arms:
        by = {}
        for s in sizes:
            acc = {a: {r["seed"]: r["accuracy"] for r in results if r["arm"] == a and r["size"] == s} for a in ("full", "scratch")}
            by[str(s)] = paired_difference(acc["full"], acc["scratch"])
        out["difference"] = {"of": ["full", "scratch"], "by_size": by}
    return out


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


def run(args) -> dict:
    import torch

    from .finetune_runner import Lab

    torch.set_num_threads(max(1, args.threads))
    task = load_task(args.task, args.corpus)
    sizes, arms = parse_sizes(args.sizes), parse_arms(args.arms)
    if args.seeds < 1:
        raise ValueError("--seeds: at least 1")
    if args.snapshots:
        return run_snapshots(args, task, sizes[0])
    lab = Lab(Path(args.model), task, args.steps, args.threads)
    if args.out and not args.no_export:
        lab.prepare_export(Path(args.out))
    emit({"event": "start", "task": task.name, "kind": task.kind, "labels": task.labels, "arms": arms, "sizes": sizes,
          "seeds": args.seeds, "n_train": len(task.train), "n_test": len(task.test),
          "jobs": len(arms) * len(sizes) * args.seeds, "steps": lab.cfg.steps, "how": lab.how()})
    results = []
    for size in sizes:
        for seed in range(args.seeds):
            for arm in arms:
                model, result = lab.job(arm, size, seed)
                results.append(result)
                emit(result)
                if size == sizes[-1] and seed == 0 and args.out and not args.no_export:
                    emit(lab.export(model, result, Path(args.out)))
    lab.finish_export()
    gpt = None if args.no_gpt else lab.gpt_way()
    if gpt is not None:
        emit(gpt)
    summary = {"event": "summary", "task": task.name, **summarize(results, arms, sizes), "gpt_way": gpt}
    return summary


def run_snapshots(args, task, size) -> dict:
    from .finetune_runner import Lab

    run_dir = Path(args.snapshots)
    found = snapshot_folders(run_dir)
    emit({"event": "start", "task": task.name, "kind": task.kind, "labels": task.labels, "arms": ["full"], "sizes": [size],
          "seeds": args.seeds, "n_train": len(task.train), "n_test": len(task.test), "jobs": len(found) * args.seeds,
          "snapshots": [{"model": n, "step": s} for n, s, _ in found]})
    results, by_step = [], []
    for name, step, folder in found:
        lab = Lab(folder, task, args.steps, args.threads)
        accs = []
        for seed in range(args.seeds):
            _, result = lab.job("full", size, seed)
            result |= {"model": name, "step": step}
            results.append(result)
            accs.append(result["accuracy"])
            emit(result)
        by_step.append({"model": name, "step": step, **interval(accs)})
    return {"event": "summary", "task": task.name, "run": run_dir.name, "size": size, "by_step": by_step,
            **summarize(results, ["full"], [size]), "gpt_way": None}


def cli(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training finetune", description=__doc__.split("\n\n")[0])
    add_finetune_args(p)
    args = p.parse_args(argv)
    if args.list_tasks:
        print(json.dumps(list_tasks(), indent=1))
        return 0
    if args.check_task:
        from app.contract.task_format import check_task

        problems = check_task(Path(args.check_task).read_bytes())
        print(json.dumps(problems, indent=1))
        return 1 if problems else 0
    try:
        if not args.task:
            raise ValueError("--task: give a shipped task's name or a .jsonl file (see --list-tasks)")
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
