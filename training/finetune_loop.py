"""One fine-tune of a trained arm (full, scratch): the labelled examples it gets, the fair budget
it trains under, its answers on the held-out examples.

The fair budget (the same rule for every arm, issue 26): a quarter of the arm's own labelled
examples (`val_share`, at least one of each label) is set aside as a validation slice; the arm
trains on the rest in batches, checks its loss on the slice after every `eval_every` steps (one
pass over its examples, at least 5 steps), and stops when that loss has not improved for `patience`
checks in a row (never before `min_steps`: a random start needs time before its loss moves) or
at the cap (`cap_epochs` passes over its examples, between `min_cap` and `max_cap` steps: the cap
grows with the data). The weights kept are those of its best check. The
linear arms (probe, ngram: training/finetune_linear.py) pick their one setting on the same slice.
So every arm sees the same examples, and none is cut off while it still improves.

`--steps N` instead trains every trained arm exactly N steps on all its examples (no slice, no
stopping): the lab's old fixed budget, for comparison.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import torch

from app.contract.task_format import Task

from .finetune_model import Batch, Classifier, build_classifier, classification_loss, encode_batch
from .tokenizer import UNK


@dataclass
class FinetuneConfig:
    batch_size: int = 16
    # per arm: a pretrained encoder wants a gentle step; from scratch 1e-3 (3e-4 and 3e-3 did no better)
    lr: dict = field(default_factory=lambda: {"full": 3e-4, "scratch": 1e-3})
    weight_decay: float = 0.01
    warmup_steps: int = 10  # linear warmup, then a constant rate (the stopping rule ends training)
    val_share: float = 0.25
    patience: int = 5
    min_eval_every: int = 5
    min_steps: int = 100
    cap_epochs: int = 30
    min_cap: int = 200
    max_cap: int = 1000
    fixed_steps: int | None = None  # --steps: exactly this many steps, no validation slice
    eval_batch: int = 64

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


@torch.no_grad()
def mean_loss(model: Classifier, data: TaskData, rows: list[tuple], cfg: FinetuneConfig) -> float:
    model.eval()
    total = weight = 0.0
    for i in range(0, len(rows), cfg.eval_batch):
        b = data.batch(rows[i:i + cfg.eval_batch])
        _, loss = model(b.input_ids, b.token_type_ids, b.labels)
        n = int((b.labels != -100).sum())
        total, weight = total + float(loss) * n, weight + n
    return total / max(weight, 1)


def train_arm(model: Classifier, arm: str, data: TaskData, fit: list[int], val: list[int], seed: int,
              cfg: FinetuneConfig) -> dict:
    """Train in place under the fair budget (or cfg.fixed_steps); {"steps", "best_step", "stopped"}."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr[arm], weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / cfg.warmup_steps))
    torch.manual_seed(20_000 + seed)  # dropout
    fixed = cfg.fixed_steps
    cap = fixed if fixed else cfg.cap(len(fit))
    every = cfg.eval_every(len(fit))
    val_rows = [data.train[i] for i in val]
    best, best_step, best_state, waited, step, stopped = math.inf, 0, None, 0, 0, "cap"
    stream = batches(len(fit), cfg.batch_size, seed)
    while step < cap:
        model.train()
        b = data.batch([data.train[fit[i]] for i in next(stream)])
        _, loss = model(b.input_ids, b.token_type_ids, b.labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        step += 1
        if fixed or (step % every and step < cap):
            continue
        v = mean_loss(model, data, val_rows, cfg)
        if v < best - 1e-4:
            best, best_step, waited = v, step, 0
            best_state = {k: t.detach().clone() for k, t in model.state_dict().items()}
        else:
            waited += 1
            if waited >= cfg.patience and step >= cfg.min_steps:
                stopped = "validation stopped improving"
                break
    if fixed:
        best_step, stopped = step, "fixed steps"
    elif best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return {"steps": step, "best_step": best_step, "stopped": stopped}


@torch.no_grad()
def predict(model: Classifier, data: TaskData, rows: list[tuple], cfg: FinetuneConfig) -> list:
    """The highest-scoring label id per text (sequence) or per scored character (token)."""
    model.eval()
    out = []
    for i in range(0, len(rows), cfg.eval_batch):
        b = data.batch(rows[i:i + cfg.eval_batch])
        guess = model(b.input_ids, b.token_type_ids).argmax(-1)
        if data.kind == "sequence":
            out += guess.tolist()
        else:
            out += [[int(g) for g, y in zip(gs, ys) if y != -100] for gs, ys in zip(guess, b.labels)]
    return out


def finetune_one(pretrained, data: TaskData, arm: str, size: int | None, seed: int,
                 cfg: FinetuneConfig) -> tuple[Classifier, list, dict]:
    """Build, train and answer the held-out examples: (model, predictions, info with "examples",
    "steps", "best_step", "stopped", "validation")."""
    model = build_classifier(arm, pretrained, len(data.labels), data.kind, seed)
    chosen = data.choose(size, seed)
    fit, val = (chosen, []) if cfg.fixed_steps else data.split(chosen, seed, cfg.val_share)
    info = train_arm(model, arm, data, fit, val, seed, cfg)
    return model, predict(model, data, data.test, cfg), info | {"examples": len(chosen), "validation": len(val)}


def budget_note(cfg: FinetuneConfig) -> str:
    if cfg.fixed_steps:
        return (f"every trained arm: exactly {cfg.fixed_steps} steps of {cfg.batch_size} examples on all its labelled "
                "examples (fixed budget, --steps)")
    return (f"every arm keeps {round(100 * cfg.val_share)} % of its labelled examples aside as a validation slice. "
            f"Trained arms (full, scratch): batches of {cfg.batch_size}, AdamW (weight decay {cfg.weight_decay}, "
            f"{cfg.warmup_steps} warmup steps, learning rate " + ", ".join(f"{a} {lr:g}" for a, lr in cfg.lr.items())
            + f"); the validation loss is checked after every pass over the examples (at least every "
            f"{cfg.min_eval_every} steps); training stops when it has not improved for {cfg.patience} checks "
            f"(never before {cfg.min_steps} steps), or at "
            f"{cfg.cap_epochs} passes ({cfg.min_cap} to {cfg.max_cap} steps), and keeps its best weights. "
            "Linear arms (probe, ngram): a logistic regression fitted to convergence, its regularisation strength "
            "chosen on the same slice. Likelihood: one threshold set on all the labelled examples.")
