"""The trained arms' fine-tunes (full, scratch) in worker processes, so a grid uses every core it is
given (`--workers`, default 2): each worker builds its own Lab (the BERT read back out of bert.onnx)
once and runs one fine-tune at a time on one thread; the main process runs the cheap arms (ngram,
likelihood, probe) meanwhile and prints every result as it comes. A fine-tune's numbers do not
depend on which process ran it (everything is seeded per arm, size and seed).
"""
from __future__ import annotations

import multiprocessing as mp
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

_LAB = None


def _start(folder: str, task, steps: int | None, device: str = "cpu") -> None:
    global _LAB
    import torch

    from .runner import Lab

    torch.set_num_threads(1)
    _LAB = Lab(Path(folder), task, steps, 1, device)


def _job(arm: str, size, seed: int, keep_weights: bool):
    model, result, u = _LAB.job(arm, size, seed)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()} if keep_weights else None
    return result, u, state


def pool(workers: int, folder: Path, task, steps: int | None, device: str = "cpu") -> ProcessPoolExecutor:
    return ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"), initializer=_start,
                               initargs=(str(folder), task, steps, device))


def submit(executor: ProcessPoolExecutor, arm: str, size, seed: int, keep_weights: bool) -> Future:
    return executor.submit(_job, arm, size, seed, keep_weights)
