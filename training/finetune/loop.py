"""One fine-tune of a trained arm (full, scratch): the labelled examples it gets, how long it
trains, its answers on the held-out examples.

The budget rule (issue 32): a quarter of the arm's own labelled examples (`val_share`, at least one
of each label) is set aside as a validation slice. The arm trains on the rest in batches with a
class-weighted loss (a rare tag counts as much in total as the common one: `class_weights`) and is
checked on the slice every `eval_every` steps (one pass over its examples, at least 5 steps): the
slice's score (F1 of the rarer tag, or accuracy) and, to break ties, its loss. The weights kept are
those of the best check, step 0 (the start) included; training ends when the best has not moved for
`patience` checks, or at the cap (`cap_epochs` passes over its examples, `min_cap` to `max_cap`
steps): a run whose best check is its last at the cap is reported as still improving
("still_improving": true). No floor: the slice decides the length. The recipes that call this
(LP-FT for full, two model sizes for scratch) are training/finetune/lpft.py; the linear arms
(probe, ngram: training/finetune/linear.py) pick their C on the same slice.

`--steps N` instead trains every trained arm exactly N steps on all its examples (no slice, no
choosing): the lab's old fixed budget, for comparison.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import torch

from app.contract.task_format import Task

from ..device import autocast_args
from .model import Batch, Classifier, build_classifier, classification_loss, encode_batch
from .stats import val_score
from ..tokenizer import UNK


# The learning rates a search may try, half a decade apart (training/finetune/lpft.py rate_search).
LADDER = (1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2)


@dataclass
class FinetuneConfig:
    batch_size: int = 16
    # where each trained arm's rate search starts (it tries the neighbours on LADDER too and widens
    # while an end wins; --steps trains at this rate alone): LP-FT's fine-tuning stage gentler than a
    # plain fine-tune's 3e-4 (Kumar et al., 2022); from scratch 3e-4 (its searches at 32 labels chose 1e-4 to 1e-3)
    lr: dict = field(default_factory=lambda: {"full": 1e-4, "scratch": 3e-4})
    weight_decay: float = 0.01
    warmup_steps: int = 10  # linear warmup, then a constant rate (the validation slice chooses the step)
    val_share: float = 0.25
    patience: int = 6
    min_eval_every: int = 5
    cap_epochs: int = 30
    min_cap: int = 150
    max_cap: int = 600
    fixed_steps: int | None = None  # --steps: exactly this many steps, no validation slice
    eval_batch: int = 64
    device: str = "cpu"  # where the trained arms train (--device; resolved): the model comes back to the CPU after

    def eval_every(self, n_fit: int) -> int:
        return max(self.min_eval_every, math.ceil(n_fit / self.batch_size))

    def cap(self, n_fit: int) -> int:
        return min(self.max_cap, max(self.min_cap, self.cap_epochs * math.ceil(n_fit / self.batch_size)))


class TaskData:
    """A task's examples as (text, target) with label ids, and how to batch them for a model."""

    def __init__(self, task: Task, stoi: dict, context: int):
        self.task, self.kind, self.labels = task, task.kind, task.labels
        self.stoi, self.context = stoi, context
        index = {lab: i for i, lab in enumerate(task.labels)}
        target = (lambda e: index[e.label]) if task.kind == "sequence" else (lambda e: [index[t] for t in e.tags])
        self.train = [(e.text, target(e)) for e in task.train]
        self.test = [(e.text, target(e)) for e in task.test]
        counts = [0] * len(task.labels)
        for _, y in self.train:
            for t in ([y] if task.kind == "sequence" else y):
                counts[t] += 1
        self.majority = max(range(len(counts)), key=lambda i: counts[i])  # the most common label in training

    def test_golds(self) -> list:
        """Held-out targets as scored: per-character ones cut at the model's context (as encode_batch)."""
        keep = self.context - 2
        return [y if self.kind == "sequence" else y[:keep] for _, y in self.test]

    def batch(self, rows: list[tuple]) -> Batch:
        return encode_batch([r[0] for r in rows], [r[1] for r in rows], self.kind, self.stoi, UNK, self.context)

    def min_size(self) -> int:
        """The fewest labelled examples that leave some to learn from and a validation slice."""
        return 2 * len(self.labels) if self.kind == "sequence" else 2

    def choose(self, size: int | None, seed: int) -> list[int]:
        """`size` training examples (None = all), drawn with the seed; for a whole-input task the
        labels take turns, so 8 examples of 2 labels are 4 + 4."""
        n = len(self.train)
        if size is None or size >= n:
            return list(range(n))
        rng = random.Random(seed)
        if self.kind == "token":
            return sorted(rng.sample(range(n), size))
        order = self._interleaved(range(n), rng)
        return sorted(order[:size])

    def _interleaved(self, indices, rng: random.Random) -> list[int]:
        groups: dict = {}
        for i in indices:
            groups.setdefault(self.train[i][1], []).append(i)
        for g in groups.values():
            rng.shuffle(g)
        return [g[k] for k in range(max(map(len, groups.values()))) for _, g in sorted(groups.items()) if k < len(g)]

    def split(self, chosen: list[int], seed: int, share: float) -> tuple[list[int], list[int]]:
        """(fit, validation) of the chosen examples: `share` of them (at least one of each label of a
        whole-input task, at least one text) for validation, drawn with the seed."""
        rng = random.Random(5_000 + seed)
        if self.kind == "sequence":
            n_val = max(len({self.train[i][1] for i in chosen}), round(share * len(chosen)))
            order = self._interleaved(chosen, rng)
        else:
            n_val = max(1, round(share * len(chosen)))
            order = list(chosen)
            rng.shuffle(order)
        n_val = min(n_val, len(chosen) - 1)
        return sorted(order[n_val:]), sorted(order[:n_val])


def batches(n: int, batch_size: int, seed: int):
    """Endless batches of indices 0..n-1: passes over a fresh shuffle each."""
    rng = random.Random(1_000 + seed)
    pool: list[int] = []
    while True:
        if batch_size >= n:
            yield list(range(n))
            continue
        while len(pool) < batch_size:
            perm = list(range(n))
            rng.shuffle(perm)
            pool += perm
        yield pool[:batch_size]
        pool = pool[batch_size:]


def class_weights(data: TaskData, rows: list[int]) -> torch.Tensor:
    """Balanced class weights of the examples' labels: n / (labels x count), 1 for a label not there."""
    counts = torch.zeros(len(data.labels))
    for i in rows:
        y = data.train[i][1]
        for t in ([y] if data.kind == "sequence" else y[:data.context - 2]):
            counts[t] += 1
    present = counts > 0
    w = torch.ones(len(data.labels))
    w[present] = counts.sum() / (int(present.sum()) * counts[present])
    return w


@torch.no_grad()
def check(model: Classifier, data: TaskData, rows: list[tuple], cfg: FinetuneConfig, weight=None) -> tuple:
    """(score, -loss) on rows: higher is better on both; the score is F1 of the rarer tags or accuracy."""
    model.eval()
    dev = next(model.parameters()).device
    total = n_all = 0.0
    preds, golds = [], []
    for i in range(0, len(rows), cfg.eval_batch):
        b = data.batch(rows[i:i + cfg.eval_batch]).to(dev)
        with torch.autocast(**autocast_args(dev.type, "fp32")):
            logits = model(b.input_ids, b.token_type_ids).float()
        loss = classification_loss(logits, b.labels, weight)
        n = int((b.labels != -100).sum())
        total, n_all = total + float(loss) * n, n_all + n
        keep = b.labels != -100
        preds.append(logits.argmax(-1)[keep].cpu()), golds.append(b.labels[keep].cpu())
    p, g = torch.cat(preds).numpy(), torch.cat(golds).numpy()
    return val_score(p, g, None if data.kind == "sequence" else data.majority), -total / max(n_all, 1)


def train_arm(model: Classifier, lr: float, data: TaskData, fit: list[int], val: list[int], seed: int,
              cfg: FinetuneConfig) -> dict:
    """Train in place, keep the best check's weights (or train cfg.fixed_steps): {"steps", "best_step",
    "stopped", "still_improving", "val_score"}. On a GPU (cfg.device) it trains there and comes back
    to the CPU, so what follows (answers, export) is the same on every machine."""
    model.to(cfg.device)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / cfg.warmup_steps))
    weight = class_weights(data, fit).to(cfg.device)
    torch.manual_seed(20_000 + seed)  # dropout
    fixed = cfg.fixed_steps
    cap = fixed if fixed else cfg.cap(len(fit))
    every = cfg.eval_every(len(fit))
    val_rows = [data.train[i] for i in val]
    best = check(model, data, val_rows, cfg, weight) if not fixed else None
    best_step, best_state, waited, step, stopped = 0, _state(model), 0, 0, "cap"
    stream = batches(len(fit), cfg.batch_size, seed)
    while step < cap:
        model.train()
        b = data.batch([data.train[fit[i]] for i in next(stream)]).to(cfg.device)
        with torch.autocast(**autocast_args(cfg.device, "fp32")):  # bf16 matmuls on a GPU only
            logits = model(b.input_ids, b.token_type_ids).float()
        loss = classification_loss(logits, b.labels, weight)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        step += 1
        if fixed or (step % every and step < cap):
            continue
        v = check(model, data, val_rows, cfg, weight)
        if v > (best[0], best[1] + 1e-4):
            best, best_step, waited, best_state = v, step, 0, _state(model)
        else:
            waited += 1
            if waited >= cfg.patience:
                stopped = "validation stopped improving"
                break
    if fixed:
        best_step, stopped = step, "fixed steps"
    else:
        model.load_state_dict(best_state)
    model.to("cpu").eval()
    return {"steps": step, "best_step": best_step, "stopped": stopped,
            "still_improving": bool(not fixed and stopped == "cap" and best_step == step),
            "val_score": None if fixed else round(best[0], 4), "val_loss": None if fixed else round(-best[1], 4)}


def _state(model) -> dict:
    return {k: t.detach().clone() for k, t in model.state_dict().items()}


@torch.no_grad()
def predict(model: Classifier, data: TaskData, rows: list[tuple], cfg: FinetuneConfig) -> list:
    """The highest-scoring label id per text (sequence) or per scored character (token)."""
    model.eval()
    out = []
    for i in range(0, len(rows), cfg.eval_batch):
        b = data.batch(rows[i:i + cfg.eval_batch]).to(next(model.parameters()).device)
        guess = model(b.input_ids, b.token_type_ids).argmax(-1).cpu()
        if data.kind == "sequence":
            out += guess.tolist()
        else:
            out += [[int(g) for g, y in zip(gs, ys) if y != -100] for gs, ys in zip(guess, b.labels)]
    return out


def budget_note(cfg: FinetuneConfig) -> str:
    if cfg.fixed_steps:
        return (f"every trained arm: exactly {cfg.fixed_steps} steps of {cfg.batch_size} examples on all its labelled "
                "examples (fixed budget, --steps)")
    lrs = "; ".join(f"{a} around {v:g}" for a, v in cfg.lr.items())
    return (f"every arm keeps {round(100 * cfg.val_share)} % of its labelled examples aside as a validation slice and "
            "weighs the labels so a rare one counts as much as a common one (class weights). Full: LP-FT (a "
            "logistic-regression head fitted on the frozen encoder first, then everything fine-tuned at a smaller "
            "rate). Scratch: the same model and a smaller one from random weights, the better on the slice kept. "
            f"Trained arms: batches of {cfg.batch_size}, AdamW (weight decay {cfg.weight_decay}, {cfg.warmup_steps} "
            f"warmup steps), learning rate chosen on the slice ({lrs}: that rate and the ones half a decade either side, "
            "widened while the highest or lowest tried is best); the slice's score is checked every pass "
            f"over the examples (at least every {cfg.min_eval_every} steps) and the best check is kept, the start "
            f"included; training ends when it has not improved for {cfg.patience} checks or at {cfg.cap_epochs} "
            f"passes ({cfg.min_cap} to {cfg.max_cap} steps; a run still improving there is marked so). "
            "Linear arms (probe, ngram): a class-weighted logistic regression, its C chosen on the slice. "
            "Readout: no training; one threshold set on the labelled examples not in the slice.")
