"""Optimizers and learning-rate schedules for short CPU budgets.

Muon (torch.optim.Muon) for the hidden 2-D weight matrices (attention and MLP): it orthogonalises
each update, so every direction of a matrix moves at the same rate and a few hundred steps go
much further than with Adam. Everything else (embeddings, which Muon is not meant for, biases,
LayerNorm gains, the heads' small vectors) stays on AdamW. With adjust_lr_fn="match_rms_adamw"
Muon's update has the RMS of an AdamW update, so one learning rate serves both.

Schedules, as a multiplier of the peak rate given the step and the run's progress in [0, 1]:
    cosine  linear warmup, cosine to min_lr_ratio (the classic);
    wsd     linear warmup, hold the peak, then decay linearly to min_lr_ratio over the last
            `decay_frac` of the run (warmup-stable-decay: the decay is where the loss drops, and
            it works the same whether the run ends by steps or by the clock).
"""
from __future__ import annotations

import math

import torch


class Combined:
    """Several optimizers stepped as one (the trainer sets every group's lr)."""

    def __init__(self, *optimizers):
        self.optimizers = [o for o in optimizers if o is not None]

    @property
    def param_groups(self):
        return [g for o in self.optimizers for g in o.param_groups]

    def zero_grad(self, set_to_none: bool = True):
        for o in self.optimizers:
            o.zero_grad(set_to_none=set_to_none)

    def step(self):
        for o in self.optimizers:
            o.step()

    def state_dict(self):
        return {"combined": [o.state_dict() for o in self.optimizers]}

    def load_state_dict(self, state):
        for o, s in zip(self.optimizers, state["combined"]):
            o.load_state_dict(s)


def is_hidden_matrix(name: str, p: torch.Tensor) -> bool:
    """The 2-D weights inside the Transformer blocks and heads (not embedding tables)."""
    return p.dim() == 2 and "emb" not in name


def make_optimizer(model: torch.nn.Module, optimizer: str, lr: float, weight_decay: float, muon_lr_scale: float = 1.0):
    """Groups carry "lr_scale": the trainer sets each group's lr to the schedule's lr times it."""
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    matrices = [p for n, p in params if is_hidden_matrix(n, p)]
    rest = [p for n, p in params if not is_hidden_matrix(n, p)]
    if optimizer == "adamw":
        # No weight decay on biases, LayerNorm and embeddings (1-d params and tables).
        groups = [{"params": matrices, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]
        # fused=True: one kernel per step for all parameters instead of a Python loop over them.
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.99), fused=True)
    if optimizer == "muon":
        muon = torch.optim.Muon([{"params": matrices, "lr_scale": muon_lr_scale}], lr=lr * muon_lr_scale,
                                weight_decay=weight_decay, adjust_lr_fn="match_rms_adamw") if matrices else None
        adam = torch.optim.AdamW(rest, lr=lr, betas=(0.9, 0.99), weight_decay=0.0, fused=True)
        return Combined(muon, adam)
    raise ValueError(f"unknown optimizer {optimizer!r}; choose adamw or muon")


def lr_multiplier(schedule: str, step: int, progress: float, warmup: int, min_ratio: float,
                  decay_frac: float = 0.3) -> float:
    """Fraction of the peak learning rate at this step (0-based) and progress (0..1)."""
    if step < warmup:
        return (step + 1) / warmup
    p = min(1.0, max(0.0, progress))
    if schedule == "cosine":
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * p))
    if schedule == "wsd":
        start = 1.0 - decay_frac
        if p <= start:
            return 1.0
        return max(min_ratio, 1.0 - (1.0 - min_ratio) * (p - start) / max(decay_frac, 1e-9))
    if schedule == "linear":
        return 1.0 - (1.0 - min_ratio) * p
    raise ValueError(f"unknown schedule {schedule!r}; choose cosine, wsd or linear")
