"""One training step of the fine-tune lab, timed on this machine (issue 42 must 3): the unit of its
cost model (app/contract/finetune_cost.py).

    python -m training finetune --model models --task spaces --time-step
    {"event": "step_time", "step_seconds": 0.155, "small_step_seconds": 0.027, "start_seconds": 3.3,
     "padded_length": 69.0, "batch": 16, "threads": 1, "device": "cpu", "context": 128, "model", "task"}

A step is what a trained arm does each step (training/finetune/loop.py train_arm): forward, backward,
clipping and AdamW's update of the pretrained-size classifier on 16 of the task's own training texts
(finetune_cost.sample_batches), one thread. The first batch is a warm-up (allocations); the others
are timed (CPU seconds; on a GPU wall seconds, synchronised), and the step time is their median
seconds per token times the sampled batches' mean padded length (`padded_length`): one slow step (a
neighbour's burst) moves nothing. The smaller from-scratch model is timed the same way.
`start_seconds` is the CPU this process had spent when it was ready to train (Python, torch, the
BERT read out of bert.onnx, scikit-learn): one trainer process starting. The torch random state and
thread count are restored afterwards, so a run's numbers are the same with or without the measurement.
"""
from __future__ import annotations

import statistics
import time

from app.contract.finetune_cost import padded_length, sample_batches


def _clock(device: str) -> float:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()
        return time.perf_counter()
    return time.process_time()


def time_model(model, data, rows: list[list[int]], device: str = "cpu") -> float:
    """Median seconds per token of a step over rows[1:] (rows[0] warms up)."""
    import torch

    from .model import classification_loss

    model.to(device).train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5)
    per_token = []
    for i, batch in enumerate(rows):
        b = data.batch([data.train[j] for j in batch]).to(device)
        t0 = _clock(device)
        loss = classification_loss(model(b.input_ids, b.token_type_ids).float(), b.labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        seconds = _clock(device) - t0
        if i:
            per_token.append(seconds / b.input_ids.shape[1])
    model.to("cpu")
    return statistics.median(per_token)


def measure(bert, data, device: str = "cpu") -> dict:
    """{"step_seconds", "small_step_seconds", "start_seconds", "padded_length", "batch", "threads", "device"}."""
    import torch

    from .model import build_classifier

    start = time.process_time()
    rng, threads = torch.get_rng_state(), torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        rows = sample_batches(len(data.train))
        n = len(data.labels)
        full = time_model(build_classifier("full", bert, n, data.kind, 0), data, rows, device)
        small = time_model(build_classifier("scratch", bert, n, data.kind, 0, small=True), data, rows, device)
    finally:
        torch.set_rng_state(rng)
        torch.set_num_threads(threads)
    context = bert.cfg.context
    tokens = padded_length([len(t) for t, _ in data.train], context)  # the sampled batches' mean
    return {"step_seconds": round(full * tokens, 5), "small_step_seconds": round(small * tokens, 5),
            "start_seconds": round(start, 2), "padded_length": round(tokens, 2), "batch": len(rows[0]) if rows else 0,
            "threads": 1, "device": device, "context": context}
