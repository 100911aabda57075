"""Pretrain any family of the table (training/families/) on a corpus, on the CPU or a GPU (--device).

`Trainer` holds one model's training state: the model and objective its family names, the
optimizer, the batch source, the schedule and the checkpoint. One step is family-blind: the
objective turns a batch into a loss (training/objectives.py). The loop (`train_loop`) steps one
or several trainers (a live run trains GPT, BERT and ELECTRA side by side, the next step going
to whichever has had less compute) and reports to callbacks, as minGPT's trainer does: the CLI's
progress bar and checkpoints, the live run's events, samples and snapshots.

AdamW (or Muon + AdamW), linear warmup, then warmup-stable-decay (or cosine) over the step budget
or the wall-clock budget (whichever ends first), periodic validation on held-out documents,
Ctrl-C saves a checkpoint, --resume continues.
"""
from __future__ import annotations

import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from .data import encode_documents, load_corpus
from .device import autocast_args, precision_that_runs, to_device
from .device import describe as describe_device
from .device import resolve as resolve_device
from .families import family
from .model import TransformerConfig, count_parameters
from .optim import lr_multiplier, make_optimizer
from .tokenizer import CharTokenizer


@dataclass
class TrainConfig:
    family: str = "gpt"
    corpus: str = ""
    out: str = "runs/gpt"
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 192
    n_ff: int = 768
    context: int = 128
    batch_size: int = 32
    steps: int = 5000
    minutes: float = 0.0  # wall-clock budget; 0 = steps only
    clock: str = "wall"  # what minutes count: "wall" time, or this process's "cpu" time (benchmarks on a shared machine)
    lr: float = 0.0  # peak learning rate; 0 = the family's default (training/families/)
    min_lr_ratio: float = 0.0  # the schedule's floor, as a fraction of the peak
    warmup: int = -1  # steps; -1 = the family's default
    optimizer: str = ""  # "adamw"; "muon": Muon for hidden matrices + AdamW for the rest; "" = the family's default
    schedule: str = "wsd"  # warmup-stable-decay; "cosine"; "linear"
    decay_frac: float = 0.3  # wsd: the share of the run spent decaying
    muon_lr_scale: float = 1.0  # muon: the hidden matrices' lr as a fraction of lr (AdamW's, for the rest)
    dropout: float = -1.0  # -1 = the family's default; presets for short runs on big corpora use 0
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    seed: int = 1337
    eval_interval: int = 250
    eval_batches: int = 20
    mask_rate: float = 0.15
    masking: str = "char"  # which characters MLM hides: "char", "span" or "word" (training/masking.py)
    nsp: bool = True
    threads: int = 0  # 0 = torch default
    precision: str = "fp32"  # "bf16": mixed precision (bf16 matmuls, fp32 weights), faster on CPUs with AVX512-BF16/AMX
    compile: bool = False  # torch.compile the loss computation (fuses LayerNorm/GELU/casts; ~10-20 s to compile)
    device: str = "auto"  # "auto" (CUDA when there is one), "cpu" or "cuda"; resolved, so a checkpoint says which ran
    init_from: str = ""  # a checkpoint whose weights start this model (the model's `init_from` says which)
    extra: dict = field(default_factory=dict)


class Trainer:
    def __init__(self, cfg: TrainConfig, tokenizer: CharTokenizer | None = None):
        self.family = family(cfg.family)
        for key, value in self.family.defaults.items():  # lr 0, warmup/dropout -1, optimizer "": the family's
            given = getattr(cfg, key)
            if given == "" or (not isinstance(given, str) and (given < 0 or (key == "lr" and given == 0))):
                setattr(cfg, key, value)
        cfg.device = resolve_device(cfg.device)  # "auto" becomes what ran: the checkpoint and card say it
        cfg.precision = precision_that_runs(cfg.device, cfg.precision)  # bf16 autocast on CUDA: say so
        if cfg.device != "cpu":  # the card's "machine": the GPU's name, recorded where it ran
            cfg.extra = {**cfg.extra, "device_name": describe_device(cfg.device)}
        self.cfg = cfg
        torch.manual_seed(cfg.seed)  # seeds CUDA too: dropout on a GPU draws from its own stream
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        self.splits = load_corpus(cfg.corpus)
        if not self.splits["train"] or not self.splits["validation"]:
            raise ValueError(f"{cfg.corpus}: too little text to train on and hold some out (it must cut into at "
                             "least 3 documents at line breaks); give a longer text or a folder of files")
        train_text = "".join(d.text for d in self.splits["train"])
        state = torch.load(cfg.init_from, weights_only=False, map_location="cpu") if cfg.init_from else None
        if state is not None and tokenizer is None:  # the starting weights' characters, in their order
            tokenizer = CharTokenizer.from_json(state["vocab"])
        self.tok = tokenizer or CharTokenizer.from_text(train_text)
        self.model_cfg = TransformerConfig(
            vocab_size=self.tok.vocab_size, context=cfg.context, n_layer=cfg.n_layer,
            n_head=cfg.n_head, n_embd=cfg.n_embd, n_ff=cfg.n_ff, dropout=cfg.dropout)
        self.model = self.family.build(self.model_cfg)
        if cfg.init_from:
            # e.g. ELECTRA's discriminator starting from a trained BERT encoder (training/electra.py)
            if not hasattr(self.model, "init_from"):
                raise ValueError(f"--init-from: a {cfg.family} model cannot start from another checkpoint")
            self.model.init_from(state["model"], state["model_config"])
        self.model.to(cfg.device)  # before the optimizer: its state lives where the weights are
        self.optimizer = make_optimizer(self.model, cfg.optimizer, cfg.lr, cfg.weight_decay, cfg.muon_lr_scale)
        self.objective = self.family.make_objective(cfg, self.tok)
        loss_fn = self.objective_loss
        self.loss_fn = torch.compile(loss_fn) if cfg.compile else loss_fn
        self.train_data = self.batches("train", cfg.seed)
        self.val_split = "validation" if self.splits["validation"] else "train"
        self.step, self.elapsed, self.history = 0, 0.0, []
        self.data_gen = torch.Generator().manual_seed(cfg.seed + 1)  # masking draws

    def objective_loss(self, batch: dict):
        return self.objective.loss(self.model, batch)

    def batches(self, split: str, seed: int):
        docs = self.splits[split]
        if len(docs) < 2:  # NSP negatives need another document; the training split has several
            docs = self.splits["train"]
        return self.objective.source(encode_documents(self.tok, docs), seed)

    def batch_loss(self, source, gen):
        """Sample a batch and return (loss, {part: float})."""
        # Drawn on the CPU (the same random stream on every device), then moved where the model is.
        batch = to_device(self.objective.batch(source, self.cfg.batch_size, gen), self.cfg.device)
        with torch.autocast(**autocast_args(self.cfg.device, self.cfg.precision)):
            loss, parts = self.loss_fn(batch)
        return loss, {k: v.item() for k, v in parts.items()}

    def lr_at(self, progress: float) -> float:
        c = self.cfg
        return c.lr * lr_multiplier(c.schedule, self.step, progress, c.warmup, c.min_lr_ratio, c.decay_frac)

    def progress(self) -> float:
        p = self.step / max(1, self.cfg.steps)
        if self.cfg.minutes > 0:
            p = max(p, self.elapsed / (self.cfg.minutes * 60))
        return p

    @property
    def tokens_per_step(self) -> int:
        return self.cfg.batch_size * self.cfg.context

    @torch.no_grad()
    def evaluate(self) -> dict:
        """Mean loss parts over a fixed set of validation batches (same batches every time)."""
        self.model.eval()
        source = self.batches(self.val_split, seed=12345)
        gen = torch.Generator().manual_seed(54321)
        totals: dict[str, float] = {}
        for _ in range(self.cfg.eval_batches):
            _, parts = self.batch_loss(source, gen)
            for k, v in parts.items():
                totals[k] = totals.get(k, 0.0) + v / self.cfg.eval_batches
        self.model.train()
        return totals

    def train_step(self):
        """One optimisation step; returns (lr, loss parts, seconds)."""
        clock = time.process_time if self.cfg.clock == "cpu" else time.perf_counter
        t0 = clock()
        lr = self.lr_at(self.progress())
        for g in self.optimizer.param_groups:
            g["lr"] = lr * g.get("lr_scale", 1.0)
        loss, parts = self.batch_loss(self.train_data, self.data_gen)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
        self.optimizer.step()
        self.step += 1
        dt = clock() - t0
        self.elapsed += dt
        return lr, parts, dt

    def fit(self, log=sys.stderr, on_event=None) -> None:
        """Train until the step or wall-clock budget ends (or Ctrl-C), with a progress bar on `log`,
        validation and a checkpoint every eval_interval steps and at the end. on_event(dict), if
        given, is called every 10 steps (kind "step") and at every validation (kind "eval")."""
        out = Path(self.cfg.out)
        out.mkdir(parents=True, exist_ok=True)
        print(f"{self.cfg.family}: {count_parameters(self.model):,} parameters, vocab {self.tok.vocab_size}, "
              f"on {describe_device(self.cfg.device)}", file=log)
        report = Report(self, log, on_event)
        try:
            train_loop({self.cfg.family: self}, [report])
        except KeyboardInterrupt:
            report.interrupted = True
        report.close()
        self.save(out / "ckpt.pt")
        print(f"{'interrupted; ' if report.interrupted else ''}checkpoint saved to {out / 'ckpt.pt'} "
              f"(resume with --resume {out / 'ckpt.pt'})", file=log)

    def save(self, path: Path) -> None:
        # Block Ctrl-C while writing so a checkpoint is never half written.
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            state = {
                "train_config": self.cfg.__dict__, "model_config": self.model_cfg.to_dict(),
                "vocab": self.tok.to_json(), "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(), "step": self.step, "elapsed": self.elapsed,
                "history": self.history, "torch_rng": torch.get_rng_state(),
                "cuda_rng": torch.cuda.get_rng_state() if self.cfg.device == "cuda" else None,
                "data_gen": self.data_gen.get_state(), "train_data": self.train_data.get_state(),
            }
            tmp = path.with_suffix(".tmp")
            torch.save(state, tmp)
            tmp.replace(path)
        finally:
            signal.signal(signal.SIGINT, old)

    @classmethod
    def resume(cls, path: str | Path, **overrides) -> "Trainer":
        """Continue a checkpoint; `device` among the overrides moves it (default: where it ran)."""
        state = torch.load(path, weights_only=False, map_location="cpu")
        cfg = TrainConfig(**{**state["train_config"], **overrides})
        trainer = cls(cfg, CharTokenizer.from_json(state["vocab"]))
        trainer.model.load_state_dict(state["model"])
        trainer.optimizer.load_state_dict(state["optimizer"])
        trainer.step, trainer.elapsed, trainer.history = state["step"], state["elapsed"], state["history"]
        torch.set_rng_state(state["torch_rng"])
        if state.get("cuda_rng") is not None and trainer.cfg.device == "cuda":
            torch.cuda.set_rng_state(state["cuda_rng"])
        trainer.data_gen.set_state(state["data_gen"])
        trainer.train_data.set_state(state["train_data"])
        return trainer


class Callback:
    """What the loop reports; every method is optional. Raising from one stops the loop."""

    def on_start(self, trainers: dict) -> None: ...

    def on_step(self, name: str, trainer: Trainer, lr: float, parts: dict, seconds: float) -> None: ...

    def on_end(self, trainers: dict) -> None: ...


def train_loop(trainers: dict, callbacks: list, clock=None) -> None:
    """Step the trainers until every budget is spent, the next step going to the trainer with the
    least compute so far. clock(): if given, every trainer's elapsed time is that clock's (a live
    run's budget is the run's wall clock, evaluations and samples included)."""
    busy = {name: 0.0 for name in trainers}
    for t in trainers.values():
        t.model.train()
    for cb in callbacks:
        cb.on_start(trainers)
    while True:
        todo = [name for name, t in trainers.items() if t.progress() < 1.0]
        if not todo:
            break
        name = min(todo, key=busy.get)  # fair by compute time: the slower model is not starved
        tr = trainers[name]
        if clock is not None:
            tr.elapsed = clock()
        lr, parts, dt = tr.train_step()
        if clock is not None:
            tr.elapsed = clock()
        busy[name] += dt
        for cb in callbacks:
            cb.on_step(name, tr, lr, parts, dt)
    for cb in callbacks:
        cb.on_end(trainers)


class Report(Callback):
    """The CLI's callback: a tqdm bar (loss, tokens/s, ETA) every 10 steps, validation and a
    checkpoint every eval_interval steps and at the end, and the same as on_event(dict) calls."""

    def __init__(self, trainer: Trainer, log, on_event=None):
        self.t, self.log, self.on_event = trainer, log, on_event
        self.window, self.window_tokens, self.window_time = [], 0, 0.0
        self.interrupted = False
        # The bar counts thousandths of the budget (steps or minutes, whichever ends first), so
        # its ETA is right for either kind of budget.
        self.bar = tqdm(total=1000, initial=min(1000, int(trainer.progress() * 1000)), file=log, unit="‰",
                        bar_format="{desc} {percentage:3.0f}%|{bar:24}| [{elapsed}<{remaining}]",
                        dynamic_ncols=False, ncols=100, mininterval=0.5, leave=True)

    def event(self, kind: str, **extra) -> None:
        t = self.t
        if self.on_event is not None:
            self.on_event({"kind": kind, "step": t.step, "train_loss": float(np.mean(self.window[-10:])),
                           "tokens_per_s": round(self.window_tokens / max(self.window_time, 1e-9)),
                           "elapsed_s": round(t.elapsed, 2), "progress": min(1.0, t.progress()), **extra})

    def on_step(self, name, t, lr, parts, seconds) -> None:
        self.window.append(parts["loss"])
        self.window_tokens += t.tokens_per_step
        self.window_time += seconds
        done = t.progress() >= 1.0
        if t.step % 10 == 0 or done:
            tps = self.window_tokens / max(self.window_time, 1e-9)
            self.bar.set_description_str(f"step {t.step} loss {np.mean(self.window[-10:]):.4f} {tps:,.0f} tok/s", refresh=False)
            self.bar.update(min(1000, int(t.progress() * 1000)) - self.bar.n)
            self.event("step", lr=lr)
        if t.step % t.cfg.eval_interval == 0 or done:
            val = t.evaluate()
            t.history.append({"step": t.step, "tokens": t.step * t.tokens_per_step, "elapsed_s": round(t.elapsed, 2),
                              "lr": lr, "train_loss": float(np.mean(self.window)), **{f"val_{k}": v for k, v in val.items()}})
            self.bar.write(f"step {t.step}: train {np.mean(self.window):.4f} "
                           + " ".join(f"val_{k} {v:.4f}" for k, v in val.items()), file=self.log)
            self.event("eval", **{f"val_{k}": v for k, v in val.items()})
            self.window, self.window_tokens, self.window_time = [], 0, 0.0
            t.save(Path(t.cfg.out) / "ckpt.pt")

    def close(self) -> None:
        self.bar.close()


def load_checkpoint(path: str | Path):
    """(family, model in eval mode, tokenizer, checkpoint dict) from a checkpoint file."""
    state = torch.load(path, weights_only=False, map_location="cpu")  # a GPU checkpoint opens on any machine
    name = state["train_config"]["family"]
    model = family(name).build(TransformerConfig(**state["model_config"]))
    model.load_state_dict(state["model"])
    model.eval()
    return name, model, CharTokenizer.from_json(state["vocab"]), state
