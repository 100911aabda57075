"""How much slower a fine-tune grid runs on a machine that is busy with other work (issue 52 must 4).

The cost model (app/contract/finetune_cost.py) counts a grid in training steps whose time is measured
as CPU seconds: what a step costs when it has a core to itself. On a shared machine the grid's
processes wait for a core, and an estimate made for an idle machine came out four times too short
(said "under a minute", took 241.8 s at a load of 9-11). So the estimate counts who else wants a core:

    others   the other programs' threads that want a core now: the run queue, read from /proc (each
             thread's state and nice), sampled a few times over a fifth of a second. Not the 1-minute
             load average: it trails a change by a minute (two busy programs started 60 s ago read as
             1.3, not 2) and cannot tell a nice-0 neighbour from a niced one. Where /proc is missing
             (macOS, Windows) the load average stands in, every process counted at nice 0.
    ours     the grid's busy processes (its workers), at the trainer's nice (the server nices it)

Linux shares the cores by weight (a nice-n thread weighs 1.25 ** -n of a nice-0 one), and a thread
runs on one core at a time, so no thread gets more than a core: the shares are filled like water
(`shares`). Each of ours gets its share of a core beside the others, against min(1, cores / ours) on
an idle machine; the ratio, averaged over the samples, is the slowdown. Idle it is 1 whatever the
nice, so the cost model's own figures, measured on an idle machine, stand. Plain Python: the server's
plan and the trainer both call it."""
from __future__ import annotations

import os
import time
from pathlib import Path

NICE_WEIGHT = 1.25  # each nice level weighs 1/1.25 of the one below (the kernel's table, rounded)
SAMPLES, GAP = 6, 0.04  # the run queue read 6 times, 40 ms apart: a neighbour's burst is not its load
PROC = Path("/proc")
PF_KTHREAD = 0x00200000  # proc(5) field 9, flags: a kernel worker (nice -20, weight 86, runs for microseconds)


def weight(nice: int) -> float:
    return NICE_WEIGHT ** -nice


def run_queue(exclude: int | None = None) -> list[float] | None:
    """The weights of every thread that wants a core now (state R), this process's own left out
    (it is ours, counted as ours), or None where /proc cannot be read."""
    exclude = os.getpid() if exclude is None else exclude
    try:
        pids = [p for p in os.listdir(PROC) if p.isdigit() and int(p) != exclude]
    except OSError:
        return None
    found = []
    for pid in pids:
        try:
            tasks = os.listdir(PROC / pid / "task")
        except OSError:  # ended while we looked
            continue
        for tid in tasks:
            try:
                stat = (PROC / pid / "task" / tid / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()  # the name may hold spaces: fields after it
            if fields[0] == "R" and not int(fields[6]) & PF_KTHREAD:  # a kernel thread's burst is not a neighbour
                found.append(weight(int(fields[16])))  # field 19 of proc(5): the nice
    return found


def machine() -> tuple[list[list[float]], int, str]:
    """(the others' weights at each sample, the cores, how they were read): tests replace this to
    stand for an idle or a busy machine."""
    cores = os.cpu_count() or 1
    samples = []
    for i in range(SAMPLES):
        queue = run_queue()
        if queue is None:
            break
        samples.append(queue)
        if i < SAMPLES - 1:
            time.sleep(GAP)
    if samples:
        return samples, cores, "run queue"
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average either: counted as idle, and said so by `load` below
        load = 0.0
    return [nice_zero(load)], cores, "load average"


def nice_zero(count: float) -> list[float]:
    """A count of nice-0 processes (a load average) as weights: the fraction as a part-time one."""
    whole = int(count)
    return [1.0] * whole + ([count - whole] if count > whole else [])


def shares(weights: list[float], cores: int) -> list[float]:
    """Each thread's share of a core: in proportion to its weight, none above one core (a thread runs
    on one core at a time, and what it cannot use goes to the others)."""
    full: set[int] = set()
    while True:
        free = max(0, cores) - len(full)
        rest = sum(w for i, w in enumerate(weights) if i not in full)
        if rest <= 0 or free <= 0:
            return [1.0 if i in full else 0.0 for i in range(len(weights))]
        k = free / rest
        more = {i for i, w in enumerate(weights) if i not in full and k * w >= 1.0}
        if not more:
            return [1.0 if i in full else k * w for i, w in enumerate(weights)]
        full |= more


def as_samples(others: float | list[float] | list[list[float]]) -> list[list[float]]:
    """A count of nice-0 processes, one run queue's weights, or several samples: as samples."""
    if isinstance(others, (int, float)):
        return [nice_zero(max(0.0, float(others)))]
    if others and isinstance(others[0], list):
        return others
    return [list(others or [])]


def slowdown(others: float | list[float] | list[list[float]], cores: int, ours: int, nice: int = 0) -> float:
    """How many times longer a step takes beside `others` than on an idle machine: a count of nice-0
    processes, one run queue's weights, or several samples of it (their shares averaged)."""
    cores, ours = max(1, cores), max(1, ours)
    samples = as_samples(others)
    w = weight(max(0, nice))
    idle = min(1.0, cores / ours)
    busy = sum(shares(list(s) + [w] * ours, cores)[-1] for s in samples) / len(samples)
    return max(1.0, idle / busy) if busy > 0 else float("inf")


def load(ours: int, nice: int = 0, at: tuple | None = None) -> dict:
    """{"load", "weighted", "cores", "nice", "factor", "source", "words"}: who else wants a core now and
    what it does to the grid's time. `at`: (others, cores[, source]) instead of reading the machine."""
    others, cores, source = (at + ("given",))[:3] if at is not None else machine()
    samples = as_samples(others)
    weighted = sum(sum(s) for s in samples) / len(samples)
    # a load average is a count already (its fraction a part-time process, not a lower priority)
    count = weighted if source == "load average" or isinstance(others, (int, float)) else \
        sum(len(s) for s in samples) / len(samples)
    factor = slowdown(samples, cores, ours, nice)
    # no brackets: the words sit inside the estimate's own "(...)"
    busy = f"other work wants {count:.1f} of the {cores} cores " + ("now" if source == "run queue" else
                                                                    "over the last minute" if source == "load average"
                                                                    else source)
    if abs(weighted - count) >= 0.05:
        busy += (f", worth {f'{weighted:.1f}' if weighted >= 0.1 else 'almost none'} of them at its "
                 f"{'lower' if weighted < count else 'higher'} priority")
    words = (f"the machine is busy: {busy}, so about {factor:.1f} x an idle machine's time"
             if factor >= 1.05 else f"{busy}: as good as idle")
    return {"load": round(count, 2), "weighted": round(weighted, 2), "cores": cores, "nice": nice,
            "factor": round(factor, 3), "source": source, "words": words}
