"""Pretrain GPT (causal LM) or BERT (MLM + NSP) on a corpus, on the CPU.

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

from .data import CLMBatches, NSPPairs, encode_documents, load_corpus, mask_tokens
from .optim import lr_multiplier, make_optimizer
from .model import TransformerConfig, build_model, count_parameters
from .tokenizer import CharTokenizer


# Defaults measured on the short protocol (`python -m training.benchmark protocol`: 2 layers, width
# 96, batch 48, 600 GPT / 1,500 BERT steps, one run each). GPT validation perplexity: old defaults
# (2e-3, cosine to 0.1, warmup 100) 6.25; AdamW 3e-3 cosine to 0: 5.86; Muon 3e-3: 5.57; AdamW 1e-2
# WSD to 0: 5.13 (weight decay 0: 5.13; decaying over half the run: 5.16; Muon at 1e-2: 5.64 and
# with its matrices at 0.3x: 5.55); 1.4e-2 with warmup 60: 5.05; 2e-2: diverged (10.4). 1e-2 keeps
# a 2x margin from divergence on text not seen here. BERT stays on the unigram plateau at 5e-3 and
# 1e-2 (masked top-1 0.18 and 0.16), so it gets a lower peak and a longer warmup.
# BERT at 3e-3, WSD, warmup 100: AdamW 0.605, Muon for the hidden matrices 0.691 masked top-1.
# GPT dropout 0.1 (the 72K-character protocol repeats its text ~25 times): Shakespeare 5.19 vs 5.13
# without, but the stdlib excerpt 9.47 vs 10.45 without (old defaults there: 9.55).
FAMILY_DEFAULTS = {"gpt": {"lr": 1e-2, "warmup": 30, "optimizer": "adamw", "dropout": 0.1},
                   "bert": {"lr": 3e-3, "warmup": 100, "optimizer": "muon", "dropout": 0.0}}


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
    lr: float = 0.0  # peak learning rate; 0 = the family's default (FAMILY_DEFAULTS)
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
    nsp: bool = True
    threads: int = 0  # 0 = torch default
    precision: str = "fp32"  # "bf16": mixed precision (bf16 matmuls, fp32 weights), faster on CPUs with AVX512-BF16/AMX
    compile: bool = False  # torch.compile the loss computation (fuses LayerNorm/GELU/casts; ~10-20 s to compile)
    extra: dict = field(default_factory=dict)


class Trainer:
    def __init__(self, cfg: TrainConfig, tokenizer: CharTokenizer | None = None):
        if cfg.family not in FAMILY_DEFAULTS:
            raise ValueError(f"unknown family {cfg.family!r}; choose gpt or bert")
        defaults = FAMILY_DEFAULTS[cfg.family]
        if cfg.lr <= 0:
            cfg.lr = defaults["lr"]
        if cfg.warmup < 0:
            cfg.warmup = defaults["warmup"]
        if not cfg.optimizer:
            cfg.optimizer = defaults["optimizer"]
        if cfg.dropout < 0:
            cfg.dropout = defaults["dropout"]
        self.cfg = cfg
        torch.manual_seed(cfg.seed)
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        self.splits = load_corpus(cfg.corpus)
        if not self.splits["train"] or not self.splits["validation"]:
            raise ValueError(f"{cfg.corpus}: too little text to train on and hold some out (it must cut into at "
                             "least 3 documents at line breaks); give a longer text or a folder of files")
        train_text = "".join(d.text for d in self.splits["train"])
        self.tok = tokenizer or CharTokenizer.from_text(train_text)
        self.model_cfg = TransformerConfig(
            vocab_size=self.tok.vocab_size, context=cfg.context, n_layer=cfg.n_layer,
            n_head=cfg.n_head, n_embd=cfg.n_embd, n_ff=cfg.n_ff, dropout=cfg.dropout)
        self.model = build_model(cfg.family, self.model_cfg)
        self.optimizer = self._make_optimizer()
        # What batch_loss calls: model(x, y) -> (logits, loss) for GPT, model.loss(...) for BERT.
        self.loss_fn = self.model if cfg.family == "gpt" else self.model.loss
        if cfg.compile:
            self.loss_fn = torch.compile(self.loss_fn)
        self.train_data = self._make_batches("train", cfg.seed)
        self.val_split = "validation" if self.splits["validation"] else "train"
        self.step, self.elapsed, self.history = 0, 0.0, []
        self.data_gen = torch.Generator().manual_seed(cfg.seed + 1)  # masking draws

    def _make_optimizer(self):
        return make_optimizer(self.model, self.cfg.optimizer, self.cfg.lr, self.cfg.weight_decay, self.cfg.muon_lr_scale)

    def _make_batches(self, split: str, seed: int):
        docs = self.splits[split]
        if self.cfg.family == "gpt":
            return CLMBatches(encode_documents(self.tok, docs), self.cfg.context, seed)
        if len(docs) < 2:  # NSP negatives need another document
            docs = self.splits["train"]
        return NSPPairs(encode_documents(self.tok, docs), self.tok.stoi.get("\n"), self.cfg.context, seed)

    def batch_loss(self, batch_source, gen):
        """Sample a batch and return (loss, parts) for either family."""
        B = self.cfg.batch_size
        autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.cfg.precision == "bf16")
        if self.cfg.family == "gpt":
            x, y = batch_source.sample(B)
            with autocast:
                _, loss = self.loss_fn(x, y)
            return loss, {"loss": loss.item()}
        ids, seg, nsp_labels = batch_source.sample(B)
        corrupted, mlm_labels = mask_tokens(ids, self.tok.vocab_size, self.tok.first_char_id, gen, self.cfg.mask_rate)
        with autocast:
            loss, mlm, nsp = self.loss_fn(corrupted, seg, mlm_labels, nsp_labels, use_nsp=self.cfg.nsp)
        return loss, {"loss": loss.item(), "mlm": mlm.item(), "nsp": nsp.item()}

    def lr_at(self, progress: float) -> float:
        c = self.cfg
        return c.lr * lr_multiplier(c.schedule, self.step, progress, c.warmup, c.min_lr_ratio, c.decay_frac)

    def progress(self) -> float:
        p = self.step / max(1, self.cfg.steps)
        if self.cfg.minutes > 0:
            p = max(p, self.elapsed / (self.cfg.minutes * 60))
        return p

    @torch.no_grad()
    def evaluate(self) -> dict:
        """Mean loss over a fixed set of validation batches (same batches every time)."""
        self.model.eval()
        source = self._make_batches(self.val_split, seed=12345)
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
        """Train until the step or wall-clock budget ends (or Ctrl-C), with a tqdm progress bar on
        `log` (loss, tokens/s, ETA), validation every eval_interval steps, and a checkpoint at each
        validation and at the end. on_event(dict), if given, is called after every logged step
        (kind "step", every 10 steps) and every validation (kind "eval")."""
        c = self.cfg
        out = Path(c.out)
        out.mkdir(parents=True, exist_ok=True)
        tokens_per_step = c.batch_size * c.context
        interrupted = False
        window, window_tokens, window_time = [], 0, 0.0
        self.model.train()
        print(f"{c.family}: {count_parameters(self.model):,} parameters, vocab {self.tok.vocab_size}", file=log)
        # The bar counts progress in thousandths of the budget (steps or minutes, whichever ends
        # first), so its ETA is right for either kind of budget.
        bar = tqdm(total=1000, initial=min(1000, int(self.progress() * 1000)), file=log, unit="‰",
                   bar_format="{desc} {percentage:3.0f}%|{bar:24}| [{elapsed}<{remaining}]",
                   dynamic_ncols=False, ncols=100, mininterval=0.5, leave=True)

        def event(kind: str, **extra):
            if on_event is not None:
                on_event({"kind": kind, "step": self.step, "train_loss": float(np.mean(window[-10:])),
                          "tokens_per_s": round(window_tokens / max(window_time, 1e-9)),
                          "elapsed_s": round(self.elapsed, 2), "progress": min(1.0, self.progress()), **extra})

        while self.progress() < 1.0:
            try:
                lr, parts, dt = self.train_step()
                window.append(parts["loss"])
                window_tokens += tokens_per_step
                window_time += dt
                done = self.progress() >= 1.0
                if self.step % 10 == 0 or done:
                    tps = window_tokens / max(window_time, 1e-9)
                    bar.set_description_str(f"step {self.step} loss {np.mean(window[-10:]):.4f} {tps:,.0f} tok/s", refresh=False)
                    bar.update(min(1000, int(self.progress() * 1000)) - bar.n)
                    event("step", lr=lr)
                if self.step % c.eval_interval == 0 or done:
                    val = self.evaluate()
                    self.history.append({
                        "step": self.step, "tokens": self.step * tokens_per_step, "elapsed_s": round(self.elapsed, 2),
                        "lr": lr, "train_loss": float(np.mean(window)), **{f"val_{k}": v for k, v in val.items()}})
                    bar.write(f"step {self.step}: train {np.mean(window):.4f} "
                              + " ".join(f"val_{k} {v:.4f}" for k, v in val.items()), file=log)
                    event("eval", **{f"val_{k}": v for k, v in val.items()})
                    window, window_tokens, window_time = [], 0, 0.0
                    self.save(out / "ckpt.pt")
            except KeyboardInterrupt:
                interrupted = True
                break
        bar.close()
        self.save(out / "ckpt.pt")
        print(f"{'interrupted; ' if interrupted else ''}checkpoint saved to {out / 'ckpt.pt'} "
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
                "data_gen": self.data_gen.get_state(), "train_data": self._data_state(),
            }
            tmp = path.with_suffix(".tmp")
            torch.save(state, tmp)
            tmp.replace(path)
        finally:
            signal.signal(signal.SIGINT, old)

    def _data_state(self):
        d = self.train_data
        return d.gen.get_state() if isinstance(d, CLMBatches) else d.rng.bit_generator.state

    @classmethod
    def resume(cls, path: str | Path, **overrides) -> "Trainer":
        state = torch.load(path, weights_only=False)
        cfg = TrainConfig(**{**state["train_config"], **overrides})
        trainer = cls(cfg, CharTokenizer.from_json(state["vocab"]))
        trainer.model.load_state_dict(state["model"])
        trainer.optimizer.load_state_dict(state["optimizer"])
        trainer.step, trainer.elapsed, trainer.history = state["step"], state["elapsed"], state["history"]
        torch.set_rng_state(state["torch_rng"])
        trainer.data_gen.set_state(state["data_gen"])
        if isinstance(trainer.train_data, CLMBatches):
            trainer.train_data.gen.set_state(state["train_data"])
        else:
            trainer.train_data.rng.bit_generator.state = state["train_data"]
        return trainer


def load_checkpoint(path: str | Path):
    """(family, model in eval mode, tokenizer, checkpoint dict) from a checkpoint file."""
    state = torch.load(path, weights_only=False)
    family = state["train_config"]["family"]
    model = build_model(family, TransformerConfig(**state["model_config"]))
    model.load_state_dict(state["model"])
    model.eval()
    return family, model, CharTokenizer.from_json(state["vocab"]), state
