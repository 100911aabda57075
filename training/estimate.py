"""How long a step-bounded run will take on this machine, measured before it starts.

`--preset long` is the same 7,000 steps everywhere: 1.5-4 minutes each on one H200, about 16 hours (GPT) on a
laptop's CPU. So before it starts, the trainer times a few real steps of its own model on its own
batches (forward, backward, no optimizer step: the weights are not touched) and says what the
whole run will take here; past an hour it asks first (`--yes` answers for a script).

Why forward + backward without the step: the optimizer's update is a few percent of a step at
this size, and leaving it out means the measured run starts from exactly the weights, the random
streams and the data position it would have had without the measurement (the same seed gives the
same model, estimate or not).
"""
from __future__ import annotations

import statistics
import sys
import time

ASK_PAST_SECONDS = 3600.0


def measure_step_seconds(trainer, steps: int = 3) -> float:
    """Median seconds of `steps` timed forward + backward passes (after one untimed warm-up) on
    batches from a generator of their own; the trainer's weights and random streams are restored."""
    import torch

    cpu_rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if trainer.cfg.device == "cuda" else None
    gen = torch.Generator().manual_seed(trainer.cfg.seed + 99)
    source = trainer.batches("train", trainer.cfg.seed + 99)
    times = []
    try:
        for i in range(steps + 1):
            if trainer.cfg.device == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            loss, _ = trainer.batch_loss(source, gen)
            loss.backward()
            if trainer.cfg.device == "cuda":
                torch.cuda.synchronize()
            if i:  # the first pass pays one-off costs (allocations, kernel choice)
                times.append(time.perf_counter() - t0)
    finally:
        trainer.optimizer.zero_grad(set_to_none=True)
        torch.set_rng_state(cpu_rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)
    return statistics.median(times)


def run_seconds(trainer, step_seconds: float) -> float:
    """The whole run: its remaining steps, plus the validations (eval_batches forward passes each,
    about a third of a training step's cost)."""
    c = trainer.cfg
    remaining = max(0, c.steps - trainer.step)
    evaluations = remaining // max(1, c.eval_interval) + 1
    return step_seconds * (remaining + evaluations * c.eval_batches / 3)


def say_duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    if minutes < 1:
        return f"{seconds:.0f} s"
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def check_run_length(trainer, yes: bool, log=sys.stderr, ask=None, measure=measure_step_seconds) -> float:
    """Print how long the run will take here; past an hour, go on only with `yes` or a "y" to
    `ask(question)` (given when a person is at the terminal). Returns the estimate in seconds;
    a refusal is SystemExit with a line that names --yes."""
    step = measure(trainer)
    total = run_seconds(trainer, step)
    c = trainer.cfg
    print(f"{c.family}: {c.steps - trainer.step:,} steps at {step:.3g} s a step measured here ({c.device}): "
          f"about {say_duration(total)}", file=log)
    if total <= ASK_PAST_SECONDS or yes:
        return total
    if ask is not None and ask(f"That is over an hour on this machine. Start it? [y/N] ").strip().lower() in ("y", "yes"):
        return total
    raise SystemExit(f"python -m training train: not started: about {say_duration(total)} on this machine "
                     f"({c.device}); add --yes to start it anyway, or train on a GPU (--device auto uses one)")
