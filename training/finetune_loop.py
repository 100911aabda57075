"""One fine-tune: pick the labelled examples, train the arm's model for a fixed number of steps,
score it on the held-out examples.

Every arm sees the same examples in the same order for the same number of steps (all drawn from
the seed); only the starting encoder, what trains and the learning rate differ. A probe's encoder
never changes, so its features are computed once per task (`ProbeFeatures`) and the head trains on
them: the same arithmetic as running the frozen encoder every step (it has no dropout in eval
mode), at a fraction of the cost.
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
    steps: int = 40  # the default grid (36 fine-tunes) fits ~2 minutes of one core
    batch_size: int = 16
    # per arm: a pretrained encoder wants a gentle step (32 examples of jumbled spelling, 3 seeds: 77 %
    # at 1e-3, 83 % at 3e-4); from scratch 1e-3 (3e-4 and 3e-3 did no better); the head alone 1e-2
    lr: dict = field(default_factory=lambda: {"full": 3e-4, "scratch": 1e-3, "probe": 1e-2})
    weight_decay: float = 0.01
    warmup_frac: float = 0.1  # then linear decay to 0 (as Hugging Face's default fine-tune schedule)
    eval_batch: int = 64


class TaskData:
    """A task's examples as (text, target) with label ids, and how to batch them for a model."""

    def __init__(self, task: Task, stoi: dict, context: int):
        self.task, self.kind, self.labels = task, task.kind, task.labels
        self.stoi, self.context = stoi, context
        index = {lab: i for i, lab in enumerate(task.labels)}
        target = (lambda e: index[e.label]) if task.kind == "sequence" else (lambda e: [index[t] for t in e.tags])
        self.train = [(e.text, target(e)) for e in task.train]
        self.test = [(e.text, target(e)) for e in task.test]

    def batch(self, rows: list[tuple]) -> Batch:
        return encode_batch([r[0] for r in rows], [r[1] for r in rows], self.kind, self.stoi, UNK, self.context)

    def choose(self, size: int | None, seed: int) -> list[int]:
        """`size` training examples (None = all), drawn with the seed; for a whole-input task the
        labels take turns, so 8 examples of 2 labels are 4 + 4."""
        n = len(self.train)
        if size is None or size >= n:
            return list(range(n))
        rng = random.Random(seed)
        if self.kind == "token":
            return sorted(rng.sample(range(n), size))
        groups = {}
        for i, (_, y) in enumerate(self.train):
            groups.setdefault(y, []).append(i)
        for g in groups.values():
            rng.shuffle(g)
        order = [g[k] for k in range(max(map(len, groups.values()))) for _, g in sorted(groups.items()) if k < len(g)]
        return sorted(order[:size])


def batch_order(n: int, steps: int, batch_size: int, seed: int) -> list[list[int]]:
    """Which of the n chosen examples each step trains on: passes over a fresh shuffle."""
    rng = random.Random(1_000 + seed)
    out, pool = [], []
    for _ in range(steps):
        if batch_size >= n:
            out.append(list(range(n)))
            continue
        while len(pool) < batch_size:
            perm = list(range(n))
            rng.shuffle(perm)
            pool += perm
        out.append(pool[:batch_size])
        pool = pool[batch_size:]
    return out


def schedule(cfg: FinetuneConfig):
    warm = max(1, int(cfg.steps * cfg.warmup_frac))
    return lambda s: (s + 1) / warm if s < warm else max(0.0, (cfg.steps - s) / max(1, cfg.steps - warm))


def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> tuple[int, int]:
    keep = labels != -100
    return int((logits.argmax(-1)[keep] == labels[keep]).sum()), int(keep.sum())


class ProbeFeatures:
    """The frozen pretrained encoder's features of every example of a task, computed once."""

    def __init__(self, model: Classifier, data: TaskData, eval_batch: int):
        self.train, self.test = (self._features(model, data, rows, eval_batch) for rows in (data.train, data.test))

    @staticmethod
    @torch.no_grad()
    def _features(model, data, rows, size):
        out = []
        model.eval()
        for i in range(0, len(rows), size):
            b = data.batch(rows[i:i + size])
            f = model.features(b.input_ids, b.token_type_ids)
            out += [(f[j], b.labels[j]) for j in range(len(f))]
        return out

    @staticmethod
    def collate(items):
        """Stack features and labels (per-character ones padded with zeros / -100)."""
        if items[0][0].dim() == 1:
            return torch.stack([f for f, _ in items]), torch.stack([y for _, y in items])
        T = max(f.shape[0] for f, _ in items)
        feats = torch.zeros(len(items), T, items[0][0].shape[-1])
        labels = torch.full((len(items), T), -100, dtype=torch.long)
        for i, (f, y) in enumerate(items):
            feats[i, :len(f)], labels[i, :len(y)] = f, y
        return feats, labels


def train_arm(model: Classifier, arm: str, data: TaskData, chosen: list[int], seed: int, cfg: FinetuneConfig,
              probe_features: ProbeFeatures | None = None) -> None:
    """Train in place: the whole model (full, scratch) or only the head (probe)."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr[arm], weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule(cfg))
    torch.manual_seed(20_000 + seed)  # dropout
    model.train()
    if arm == "probe":
        model.encoder.eval()
    for step_rows in batch_order(len(chosen), cfg.steps, cfg.batch_size, seed):
        rows = [chosen[i] for i in step_rows]
        if probe_features is not None:
            feats, labels = ProbeFeatures.collate([probe_features.train[i] for i in rows])
            loss = classification_loss(model.head(feats), labels)
        else:
            b = data.batch([data.train[i] for i in rows])
            _, loss = model(b.input_ids, b.token_type_ids, b.labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
    model.eval()


@torch.no_grad()
def evaluate(model: Classifier, data: TaskData, cfg: FinetuneConfig, probe_features: ProbeFeatures | None = None) -> float:
    """Held-out accuracy: share of test examples (whole-input) or of test characters (per-character)
    whose highest-scoring label is the right one."""
    model.eval()
    right = total = 0
    for i in range(0, len(data.test), cfg.eval_batch):
        if probe_features is not None:
            feats, labels = ProbeFeatures.collate(probe_features.test[i:i + cfg.eval_batch])
            logits = model.head(feats)
        else:
            b = data.batch(data.test[i:i + cfg.eval_batch])
            logits, labels = model(b.input_ids, b.token_type_ids), b.labels
        r, t = accuracy(logits, labels)
        right, total = right + r, total + t
    return right / max(1, total)


def finetune_one(pretrained, data: TaskData, arm: str, size: int | None, seed: int, cfg: FinetuneConfig,
                 probe_features: ProbeFeatures | None = None) -> tuple[Classifier, float, int]:
    """Build, train and score one arm at one size and seed: (model, held-out accuracy, examples used)."""
    model = build_classifier(arm, pretrained, len(data.labels), data.kind, seed)
    chosen = data.choose(size, seed)
    feats = probe_features if arm == "probe" else None
    train_arm(model, arm, data, chosen, seed, cfg, feats)
    return model, evaluate(model, data, cfg, feats), len(chosen)


def steps_note(cfg: FinetuneConfig) -> str:
    return (f"{cfg.steps} steps of {cfg.batch_size} examples (AdamW, weight decay {cfg.weight_decay}, "
            f"linear warmup {math.ceil(cfg.warmup_frac * 100)} % then linear decay; learning rate "
            + ", ".join(f"{a} {lr:g}" for a, lr in cfg.lr.items()) + ")")
