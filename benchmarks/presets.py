"""Budget presets vs the straightforward baseline for the same wall-clock time (issue 12, target 2).

    python -m benchmarks.presets [--budgets 1,3,10] [--corpora shakespeare,stdlib]
                                         [--families gpt,bert] [--threads 1]

Budgets count CPU time by default (--clock cpu): with one thread, a CPU-minute is what a free core
does in a minute of wall-clock time, and a machine shared with other jobs does not shrink it.
For each budget x corpus x family: the preset (training/presets.py) and benchmarks/training_baseline.py's
recipe (the seed chapter's size, batch 48, plain Adam at a constant 1e-3) train in alternating
blocks of steps, each on its own clock, until each has spent the budget; a change in the
machine's load then hits both. Both are scored on the same held-out text:
    GPT:  nats/char over random 64-character windows of the validation documents;
    BERT: masked top-1 (15 %, 80/10/10) on 1,000 fixed NSP-shaped pairs of 64 characters.
Targets: preset - baseline <= -0.10 nats/char (GPT), >= +4 points masked top-1 (BERT).
Corpora: the shipped Shakespeare, and the Python standard library's own .py files (any machine
with Python has them; not Shakespeare; no download). A full 1+3+10 run takes 2 x 2 x 2 x 14 min.
"""
from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from benchmarks.recipe import stdlib_documents
from benchmarks.training_speed import SIZE, Baseline, cpu_report
from training.data import DEFAULT_CORPUS, encode_documents, read_documents
from training.evaluate import _masked_accuracy, bert_eval_batches
from training.presets import preset_config
from training.train import TrainConfig, Trainer

EVAL_CONTEXT = 64


def corpus_path(name: str, scratch: Path) -> Path:
    if name == "shakespeare":
        return DEFAULT_CORPUS
    if name == "stdlib":
        folder = scratch / "stdlib"
        if not folder.exists():
            folder.mkdir(parents=True)
            for d in stdlib_documents(3_000_000):
                (folder / f"{d.name}.txt").write_text(d.text, encoding="utf-8")
        return folder
    return Path(name)


@torch.no_grad()
def gpt_nats(model, data: torch.Tensor, n_windows: int = 1000, seed: int = 7) -> float:
    gen = torch.Generator().manual_seed(seed)
    starts = torch.randint(len(data) - EVAL_CONTEXT - 1, (n_windows,), generator=gen)
    total = 0.0
    for chunk in starts.split(100):
        idx = chunk[:, None] + torch.arange(EVAL_CONTEXT + 1)
        out = model(data[idx[:, :-1]])
        logits = out[0] if isinstance(out, tuple) else out
        total += F.cross_entropy(logits.transpose(1, 2), data[idx[:, 1:]], reduction="sum").item()
    return total / (n_windows * EVAL_CONTEXT)


def score(family: str, trainer: Trainer, models: dict) -> dict:
    docs = trainer.splits["validation"]
    for m in models.values():
        m.eval()
    if family == "gpt":
        data = torch.from_numpy(np.concatenate(encode_documents(trainer.tok, docs)))
        return {k: round(gpt_nats(m, data), 4) for k, m in models.items()}
    batches = bert_eval_batches(trainer.tok, docs, EVAL_CONTEXT, n_pairs=1000)
    return {k: round(_masked_accuracy(m, batches)["masked_top1"], 4) for k, m in models.items()}


def run_one(budget: float, corpus: Path, family: str, threads: int, clock: str = "cpu", seed: int = 1337) -> dict:
    torch.set_num_threads(threads)
    chars = sum(len(d.text) for d in read_documents(corpus))
    cfg = {**preset_config(budget, family, chars), "family": family, "corpus": str(corpus), "threads": threads,
           "seed": seed, "out": tempfile.mkdtemp(prefix="bench-preset-"), "eval_interval": 10**9, "clock": clock}
    trainer = Trainer(TrainConfig(**cfg))
    baseline = Baseline(trainer, family)
    now = time.process_time if clock == "cpu" else time.perf_counter
    seconds, base_time, base_steps = budget * 60, 0.0, 0
    t_start = time.perf_counter()
    while base_time < seconds or trainer.progress() < 1.0:
        if base_time < seconds:
            t0 = now()
            for _ in range(5):
                baseline.step()
            base_steps += 5
            base_time += now() - t0
        for _ in range(5):
            if trainer.progress() < 1.0:
                trainer.train_step()
    figures = score(family, trainer, {"preset": trainer.model, "baseline": baseline.model})
    metric = "nats_per_char" if family == "gpt" else "masked_top1"
    delta = figures["preset"] - figures["baseline"]
    target = delta <= -0.10 if family == "gpt" else delta >= 0.04
    return {"budget_min": budget, "clock": clock, "corpus": corpus.name, "family": family, "metric": metric, **figures,
            "delta": round(delta, 4), "target_met": bool(target),
            "steps": {"preset": trainer.step, "baseline": base_steps},
            "preset_size": {k: cfg[k] for k in ("n_layer", "n_embd", "n_ff", "context", "batch_size", "lr", "optimizer", "schedule")},
            "wall_s": round(time.perf_counter() - t_start, 1)}


def print_table(rows: list[dict]) -> None:
    print(f"\n{'budget':>6} {'corpus':<12} {'model':<5} {'metric':<14} {'preset':>8} {'baseline':>8} {'delta':>8}  target")
    for r in rows:
        print(f"{r['budget_min']:>5g}m {r['corpus']:<12} {r['family']:<5} {r['metric']:<14} {r['preset']:>8.4f} "
              f"{r['baseline']:>8.4f} {r['delta']:>+8.4f}  {'met' if r['target_met'] else 'NOT met'}")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.presets", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--budgets", default="1,3,10", help="minutes, comma-separated")
    p.add_argument("--corpora", default="shakespeare,stdlib", help="shakespeare, stdlib or folders/files")
    p.add_argument("--families", default="gpt,bert")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--clock", choices=["cpu", "wall"], default="cpu",
                   help="what a budget counts: this process's CPU time (default: on a shared machine, what one "
                        "free core would do in that wall-clock time) or wall-clock time")
    args = p.parse_args(argv)
    print(json.dumps({"cpu": {**cpu_report(), "threads": args.threads}}), flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for budget in [float(b) for b in args.budgets.split(",")]:
            for name in args.corpora.split(","):
                for family in args.families.split(","):
                    row = run_one(budget, corpus_path(name, Path(scratch)), family, args.threads, args.clock)
                    row["corpus"] = name
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    print_table(rows)
    if not math.isfinite(sum(r["delta"] for r in rows)):
        raise SystemExit("a model diverged")
