"""How much slower a fine-tune grid runs on a machine that is busy with other work (issue 52 must 4).

The cost model (app/contract/finetune_cost.py) counts a grid in training steps whose time is measured
as CPU seconds: what a step costs when it has a core to itself. On a shared machine the grid's
processes wait for a core, and an estimate made for an idle machine came out four times too short
(said "under a minute", took 241.8 s at a load of 9-11). So the estimate counts the load:

    others   the machine's 1-minute load average (os.getloadavg) before the grid starts: processes
             that want a core, counted as if at nice 0 (the load average does not say their nice)
    ours     the grid's busy processes (its workers), at the trainer's nice (the server nices it)

Linux shares the cores by weight (a nice-n process weighs 1.25 ** -n of a nice-0 one), so each of
ours gets min(1, cores * w / (others + ours * w)) of a core, against min(1, cores / ours) on an idle
machine; the ratio is the slowdown. Idle (others = 0) it is 1 whatever the nice, so the cost model's
own figures, measured on an idle machine, stand. Plain Python: the server's plan and the trainer
both call it."""
from __future__ import annotations

import os

NICE_WEIGHT = 1.25  # each nice level weighs 1/1.25 of the one below (the kernel's table, rounded)


def machine() -> tuple[float, int]:
    """(the 1-minute load average, the cores): tests replace this to stand for an idle or a busy machine."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this platform: counted as idle, and said so by `load` below
        load = 0.0
    return load, os.cpu_count() or 1


def slowdown(others: float, cores: int, ours: int, nice: int = 0) -> float:
    """How many times longer a step takes beside `others` busy processes than on an idle machine."""
    cores, ours = max(1, cores), max(1, ours)
    w = NICE_WEIGHT ** -max(0, nice)
    idle = min(1.0, cores / ours)
    busy = min(1.0, cores * w / (max(0.0, others) + ours * w))
    return max(1.0, idle / busy)


def load(ours: int, nice: int = 0, at: tuple[float, int] | None = None) -> dict:
    """{"load", "cores", "nice", "factor", "words"}: the machine now and what it does to the grid's time."""
    others, cores = at if at is not None else machine()
    factor = slowdown(others, cores, ours, nice)
    words = (f"the machine is busy: load {others:.1f} on {cores} cores, so about {factor:.1f} x an idle machine's time"
             if factor >= 1.05 else f"load {others:.1f} on {cores} cores: as good as idle")
    return {"load": round(others, 2), "cores": cores, "nice": nice, "factor": round(factor, 3), "words": words}
