"""What a fine-tune grid costs on this machine, said before it runs and while it runs (issue 42 must 3).

The unit is one training step measured here: forward + backward + the optimizer's update of the
pretrained-size classifier on a batch of 16 of the task's own training texts (`sample_batches`),
one thread, the median of a few after a warm-up (`python -m training finetune --time-step`,
training/finetune/step_time.py). The same command measures `start_seconds`: the CPU one trainer
process spends starting (Python, torch, scikit-learn, the BERT read out of bert.onnx). Every job's
CPU is counted in steps (COST); what does not grow with the texts (the processes starting, the
classifiers' export) is counted in starts. A step costs in proportion to the tokens it reads
(measured on the shipped BERT: 0.037 s at 16 x 16 tokens, 0.068 at 16 x 32, 0.134 at 16 x 64,
0.280 at 16 x 128), so a step time measured on one task is carried to another by its mean padded
batch length (`padded_length`), and a forward pass with no gradient (features, checks, answers,
the readout) costs COST["forward"] of a step per token.

How the grid runs (training/finetune/command.py): the main process starts, runs the cheap arms
(readout, ngram, probe) in `RUN_ORDER`, while `workers` processes (min(2, cores)) run the trained
arms' fine-tunes (full, scratch), each one at a time on one thread; a tracer process traces the
classifier's graph meanwhile; the classifiers are exported and GPT's way answers at the end.
`estimate` adds these up (`wall`) and says it in words.

The constants (COST) were measured on a 2-core AMD EPYC, one thread per process; each says where it
comes from. `python benchmarks/finetune_cost.py` prints the figures they come from: per job its
CPU-seconds, the step time measured at the start of the same run, and what each constant would be
(`python benchmarks/finetune_cost.py --results FILE` does the same from a result file whose start
line carries the step time). Plain Python only (no torch, numpy or FastAPI): app/ and training/
both import it.
"""
from __future__ import annotations

import math
import random

BATCH = 16               # texts per training step (training/finetune/loop.py FinetuneConfig.batch_size)
SAMPLE_BATCHES = 8       # batches the step time is measured on (and the padded length averaged over)
TRAINED = ("full", "scratch")
RUN_ORDER = ("readout", "ngram", "probe", "full", "scratch")  # cheapest first: the first point comes fast
EXPORTED = ("full", "probe", "scratch")
# The class hand-off's grid (/finetune?class=CODE fills it in; GET /api/finetunes "limits"): sized by this model
# to about 2 minutes on a 2-core laptop for a class's 20-30 labelled lines (the sentiment sentences, one step
# 0.092 s: 65 s for 20 lines, 103 s for 30; 5 seeds would be 98 and 163 s). The readout runs only when chosen.
HANDOFF = {"arms": ["readout", "full", "probe", "scratch", "ngram"], "sizes": [8, "all"], "seeds": 3}

# The one table. Steps unless named "starts". Measured on the 2-core EPYC, one thread (the module's docstring;
# benchmarks/finetune_cost.py prints the figures each comes from; "guess" marks one not measured yet).
COST = {
    "runs": 3,  # runs per rate search: the centre rate and both neighbours (scratch: for each of its two sizes);
                # a search that widens past them is folded into the checks below
    "checks": {  # checks on the validation slice per run, by the slice's texts (between two: interpolated on
                 # a log scale; a run stops 6 checks after its best one, and never past its cap)
        "full": {2: 8.0, 4: 6.0, 8: 13.5, 32: 16.0},  # a 20-line hand-off, 4 seeds (slice 2 at size 8: 4.0 to
                                                      # 10.6 s a job, mean 6.6; slice 4 at all: 6.2-6.6 s); names
                                                      # at 32 (slice 8): 42 s; slice 32: a guess
        "scratch": {2: 7.0, 4: 14.0, 8: 19.0, 32: 24.0},  # hand-off: 4.5-5.6 s at 8, 7.1-25.8 s at all (mean
                                                          # 16.4); names at 32: 60-80 s; slice 32: a guess
    },
    "step_extra": 0.12,   # a trainer's step beyond the measured one: the schedule, batching, the best weights kept
    "small": 0.18,        # the smaller scratch model's step, when the run did not measure it (0.017 / 0.094 s)
    "forward": 0.3,       # a forward pass with no gradient, per token, of a step's cost per token
    "readout_forward": 0.36,  # the same for the per-character readout's pass (spaces: 48.9 s, step 0.155 s)
    "fit": {"probe": 6.0, "ngram": 2.0, "readout": 0.5, "lp_head": 5.0},  # a regression's C search or
                                                                           # the readout's threshold, per job
    "gpt_text": 0.1,      # GPT (onnxruntime) reading one text: the whole-input readout and GPT's way (guess)
    "starts": {"worker": 1.0, "tracer": 1.8, "export": 0.3},  # a worker process; tracing the classifier
                                                              # graph (6.3 s of CPU, a start 3.5 s); one export
}


def checks_per_run(arm: str, val: int) -> float:
    """COST["checks"][arm] at a validation slice of `val` texts (log-linear between the table's sizes)."""
    table = sorted(COST["checks"][arm].items())
    if val <= table[0][0]:
        return table[0][1]
    for (a, ca), (b, cb) in zip(table, table[1:]):
        if val <= b:
            t = (math.log(val) - math.log(a)) / (math.log(b) - math.log(a))
            return ca + t * (cb - ca)
    return table[-1][1]


def sample_batches(n_train: int, batches: int = SAMPLE_BATCHES, seed: int = 0) -> list[list[int]]:
    """The training rows the step time is measured on: `batches` draws of BATCH rows (with
    replacement, so a task with fewer texts still gives full batches)."""
    rng = random.Random(10_000 + seed)
    return [rng.choices(range(n_train), k=BATCH) for _ in range(batches)] if n_train else []


def padded_length(lengths: list[int], context: int, seed: int = 0) -> float:
    """Mean tokens per text of the sampled batches: [CLS] text [SEP], padded to the batch's longest,
    cut at the model's context."""
    rows = sample_batches(len(lengths), seed=seed)
    if not rows:
        return 2.0
    return sum(min(context, max(lengths[i] for i in b) + 2) for b in rows) / len(rows)


class Shape:
    """What the cost depends on, from a task (app/contract/task_format.py Task) and the model's context."""

    def __init__(self, task, context: int):
        cut = lambda e: min(len(e.text), context - 2)  # noqa: E731
        self.kind, self.n_labels, self.context = task.kind, len(task.labels), context
        self.n_train, self.n_test = len(task.train), len(task.test)
        train = [cut(e) for e in task.train]
        test = [cut(e) for e in task.test]
        self.train_tokens = sum(train) / max(1, len(train)) + 2   # per text
        self.test_tokens = sum(test) + 2 * len(test)
        self.all_tokens = self.test_tokens + sum(train) + 2 * len(train)
        self.readout_tokens = sum(n * (n + 3) for n in train + test)  # one pass per character
        self.padded = padded_length([len(e.text) for e in task.train], context)


def split_sizes(shape: Shape, n: int) -> tuple[int, int]:
    """(fit, validation) texts of n chosen ones (training/finetune/loop.py TaskData.split)."""
    if shape.kind == "sequence":
        val = max(min(shape.n_labels, n), round(0.25 * n))
    else:
        val = max(1, round(0.25 * n))
    val = min(val, n - 1)
    return n - val, val


def chosen(shape: Shape, size) -> int:
    return shape.n_train if size == "all" else min(int(size), shape.n_train)


def forward(shape: Shape, tokens: float) -> float:
    """Steps a forward pass with no gradient over `tokens` costs."""
    return COST["forward"] * tokens / (BATCH * shape.padded)


def trained_steps(shape: Shape, arm: str, size, fixed_steps: int | None = None, small: float | None = None) -> float:
    """Steps one fine-tune of a trained arm costs: its rate search's runs x steps (a batch of fewer than
    16 texts costs its share), the checks on the slice, LP-FT's probe head, the answers."""
    n = chosen(shape, size)
    small = COST["small"] if small is None else small
    if fixed_steps:  # --steps: one run of exactly that many steps on every chosen text, no slice
        runs, fit, val, steps, checks, sizes = 1, n, 0, fixed_steps, 0, 1.0  # scratch: the same size only
    else:
        fit, val = split_sizes(shape, n)
        every = max(5, math.ceil(fit / BATCH))
        cap = min(600, max(150, 30 * math.ceil(fit / BATCH)))
        checks = checks_per_run(arm, val)
        runs, steps = COST["runs"], min(cap, every * checks)
        sizes = 1.0 if arm == "full" else 1.0 + small  # scratch: the same size and the smaller one
    one_run = steps * min(fit, BATCH) / BATCH * (1 + COST["step_extra"]) + (checks + 1) * forward(shape, val * shape.train_tokens)
    cost = runs * one_run * sizes + forward(shape, shape.test_tokens)
    if arm == "full" and val:
        cost += COST["fit"]["lp_head"] + forward(shape, n * shape.train_tokens)
    return cost


def cheap_steps(shape: Shape, arm: str, first: bool) -> float:
    """Steps one job of a cheap arm costs; the first readout and probe job also pays its one pass
    over every example (the readout's: one per character of a per-character task)."""
    cost = COST["fit"][arm]
    if first and arm == "probe":
        cost += forward(shape, shape.all_tokens)
    if first and arm == "readout":
        cost += (forward(shape, shape.readout_tokens) * COST["readout_forward"] / COST["forward"] if shape.kind == "token"
                 else COST["gpt_text"] * (shape.n_train + shape.n_test))
    return cost


def grid(arms: list[str], sizes: list, seeds: int, zero_label: bool = False, trained_up_to: int | None = None) -> list[tuple]:
    """The trainer's jobs (arm, size, seed) in its order: by size, seed, then RUN_ORDER; the trained
    arms only up to `trained_up_to`; the readout's zero-label rule first (size 0)."""
    above = lambda s: trained_up_to is not None and (s == "all" or s > trained_up_to)  # noqa: E731
    jobs = [(arm, size, seed) for size in sizes for seed in range(seeds) for arm in RUN_ORDER
            if arm in arms and not (arm in TRAINED and above(size))]
    return ([("readout", 0, 0)] if zero_label and "readout" in arms else []) + jobs


def job_steps(shape: Shape, jobs: list[tuple], fixed_steps: int | None = None, small: float | None = None) -> list[float]:
    """Each job's cost in steps, in the grid's order."""
    seen, out = set(), []
    for arm, size, _ in jobs:
        if arm in TRAINED:
            out.append(trained_steps(shape, arm, size, fixed_steps, small))
        else:
            out.append(cheap_steps(shape, arm, arm not in seen))
            seen.add(arm)
    return out


def wall(jobs: list[tuple], costs: list[float], step_seconds: float, start_seconds: float, workers: int, cores: int,
         exports: int = 0, gpt_texts: int = 0, started: bool = False) -> float:
    """Seconds from start to summary: the main process starts, runs the cheap jobs while the workers
    (each started once) run the trained ones; never faster than the CPU there is (`cores`), than the
    workers one job at a time, or than the longest job; then the exports and GPT's way. `started`:
    the processes are running already (the time left of a running grid)."""
    trained = [c * step_seconds for (arm, _, _), c in zip(jobs, costs) if arm in TRAINED]
    cheap = sum(c * step_seconds for (arm, _, _), c in zip(jobs, costs) if arm not in TRAINED)
    starts = COST["starts"]
    begin = 0.0 if started else start_seconds
    tracer = starts["tracer"] * start_seconds if exports and not started else 0.0
    tail = exports * starts["export"] * start_seconds + gpt_texts * COST["gpt_text"] * step_seconds
    pool = min(workers, len(trained)) if workers > 1 else 0
    if not pool:
        return begin + cheap + sum(trained) + tail + (tracer if cores < 2 else 0.0)
    worker_start = 0.0 if started else starts["worker"] * start_seconds
    busy = max(cheap, sum(trained) / pool + worker_start, max(trained) + worker_start,
               (cheap + sum(trained) + pool * worker_start + tracer) / max(1, cores))
    return begin + busy + tail


def duration_words(seconds: float) -> str:
    if seconds < 45:
        return "under a minute"
    if seconds < 90:
        return "about a minute"
    return f"about {round(seconds / 60)} minutes"


def left_words(seconds: float) -> str:
    said = duration_words(seconds)
    return ("less than a minute" if said == "under a minute" else said) + " left"


def _n(n: int, one: str) -> str:
    return f"{n} {one}{'' if n == 1 else 's'}"


def grid_words(jobs: list[tuple], arms: list[str], sizes: list, seeds: int, workers: int) -> str:
    """"30 fine-tunes: 5 arms x 2 sizes x 3 seeds, 2 at a time" (and what the product leaves out)."""
    main = [j for j in jobs if j[1] != 0]
    text = f"{_n(len(jobs), 'fine-tune')}: {_n(len(arms), 'arm')} x {_n(len(sizes), 'size')} x {_n(seeds, 'seed')}"
    if len(main) != len(arms) * len(sizes) * seeds:
        text += f" ({len(arms) * len(sizes) * seeds - len(main)} left out above the trained arms' largest size)"
    if len(main) != len(jobs):
        text += " + the readout with no labels"
    trained = sum(1 for j in jobs if j[0] in TRAINED)
    if trained and workers > 1:
        text += f", the trained ones {min(workers, trained)} at a time"
    return text


def estimate(shape: Shape, arms: list[str], sizes: list, seeds: int, step_seconds: float, start_seconds: float, *,
             zero_label: bool = False, workers: int = 2, cores: int = 2, fixed_steps: int | None = None,
             small: float | None = None, export: bool = True, gpt_way: bool = False,
             trained_up_to: int | None = None, busy: dict | None = None) -> dict:
    """{"seconds", "step_seconds", "start_seconds", "jobs", "workers", "costs" (steps per job, the grid's
    order), "text", "load"} of a grid: arms and sizes that will run (app/contract/finetune_evidence.py
    plan_sizes; the readout only where the task has one), seeds, with a measured step time here.
    `busy` (app/contract/finetune_load.py load): the machine's load, whose slowdown stretches every
    step and start (issue 52 must 4); None: an idle machine."""
    jobs = grid(arms, sizes, seeds, zero_label, trained_up_to)
    costs = job_steps(shape, jobs, fixed_steps, small)
    exports = sum(1 for a in EXPORTED if a in arms) if export else 0
    gpt_texts = shape.n_test if gpt_way else 0
    f = busy["factor"] if busy else 1.0
    seconds = wall(jobs, costs, step_seconds * f, start_seconds * f, workers, cores, exports, gpt_texts)
    pool = min(workers, sum(1 for j in jobs if j[0] in TRAINED)) if workers > 1 else 1
    text = (f"{duration_words(seconds)[0].upper()}{duration_words(seconds)[1:]} on this machine ("
            + (f"{busy['words']}; " if busy else "")
            + f"one training step takes {step_seconds:.2g} s here; {grid_words(jobs, arms, sizes, seeds, workers)}).")
    return {"seconds": round(seconds, 1), "step_seconds": step_seconds, "start_seconds": start_seconds,
            "jobs": len(jobs), "workers": max(1, pool), "costs": [round(c, 2) for c in costs], "text": text,
            "load": busy}
