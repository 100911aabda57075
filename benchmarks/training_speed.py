"""Training benchmarks (figures, not asserts: machines are noisy; compare within one run).

    python -m benchmarks.training_speed [--seconds 60] [--threads 2]     training speed (below)
    python -m benchmarks.presets --budgets 1,3,10 --corpora shakespeare,stdlib
                                        budget presets vs the baseline (benchmarks/presets.py)
    python -m benchmarks.recipe [--source shakespeare]
                                        the short-step protocol (benchmarks/recipe.py)

Speed: the project's trainer vs a straightforward PyTorch version (benchmarks/training_baseline.py) at the
same size and batch, measured in one run on this machine. Prints tokens/s for both and their
ratio, then trains each for the same wall-clock budget and prints the validation loss each reached.
"""
from __future__ import annotations

import argparse
import json
import time

import torch
import torch.nn.functional as F

from benchmarks.training_baseline import NaiveModel, naive_gpt_batch, naive_step
from training.data import DEFAULT_CORPUS, NSPPairs, encode_documents
from training.masking import mask_tokens
from training.train import TrainConfig, Trainer

SIZE = dict(n_layer=2, n_embd=96, n_head=4, n_ff=256, context=64, batch_size=48)


# The project's recipe at this size (AdamW, warmup, cosine over the wall-clock budget).
RECIPE = {"gpt": dict(lr=2e-3, warmup=50), "bert": dict(lr=1e-3, warmup=50)}


# The project's trainer in each of its speed settings: (precision, torch.compile).
VARIANTS = {"fp32": ("fp32", False), "bf16": ("bf16", False), "bf16+compile": ("bf16", True)}


def project_trainer(family: str, corpus: str, seconds: float, threads: int, variant: str = "fp32") -> Trainer:
    precision, compile_ = VARIANTS[variant]
    cfg = TrainConfig(family=family, corpus=corpus, out=f"/tmp/playground-bench-{family}", steps=10**9,
                      minutes=seconds / 60, eval_interval=10**9, threads=threads, precision=precision,
                      compile=compile_, **RECIPE[family], **SIZE)
    return Trainer(cfg)


class Baseline:
    """The straightforward trainer, fed by the same corpus and tokenizer."""

    def __init__(self, trainer: Trainer, family: str):
        torch.manual_seed(0)
        self.family, self.t = family, trainer
        self.model = NaiveModel(trainer.tok.vocab_size, SIZE["n_embd"], SIZE["n_layer"], SIZE["n_head"],
                                SIZE["n_ff"], SIZE["context"], causal=family == "gpt")
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.gen = torch.Generator().manual_seed(1)
        # Its own pairs at its own context (the trainer's may be longer than its 64 positions).
        self.source = trainer.train_data if family == "gpt" else NSPPairs(
            encode_documents(trainer.tok, trainer.splits["train"]), trainer.tok.stoi.get("\n"), SIZE["context"], 2)

    def batch(self, source):
        if self.family == "gpt":
            return naive_gpt_batch(source.data, SIZE["batch_size"], SIZE["context"])
        ids, seg, nsp = source.sample(SIZE["batch_size"])
        corrupted, labels = mask_tokens(ids, self.t.tok.vocab_size, self.t.tok.first_char_id, self.gen)
        return corrupted, seg, labels, nsp

    def step(self):
        return naive_step(self.model, self.opt, self.family, self.batch(self.source))

    @torch.no_grad()
    def val_loss(self, batches) -> float:
        self.model.eval()
        total = 0.0
        for b in batches:
            if self.family == "gpt":
                logits, _ = self.model(b["idx"])
                total += F.cross_entropy(logits.reshape(-1, logits.size(-1)), b["targets"].reshape(-1)).item()
            else:
                logits, nsp = self.model(b["idx"], b["segments"])
                total += (F.cross_entropy(logits.reshape(-1, logits.size(-1)), b["mlm_labels"].reshape(-1), ignore_index=-100)
                          + F.cross_entropy(nsp, b["nsp_labels"])).item()
        self.model.train()
        return total / len(batches)


def fixed_val_batches(trainer: Trainer, n: int = 20) -> list[dict]:
    """The same validation batches for both trainers, as the project's objective makes them."""
    source = trainer.batches(trainer.val_split, seed=12345)
    gen = torch.Generator().manual_seed(54321)
    return [trainer.objective.batch(source, SIZE["batch_size"], gen) for _ in range(n)]


@torch.no_grad()
def project_val_loss(trainer: Trainer, batches) -> float:
    trainer.model.eval()
    total = sum(trainer.objective.loss(trainer.model, b)[0].item() for b in batches)
    trainer.model.train()
    return total / len(batches)


def tokens_per_second(steps: dict, warmup: int = 5, rounds: int = 6, per_round: int = 5) -> dict:
    """Interleave short blocks of each trainer's steps so a load change on the machine hits both."""
    for step in steps.values():
        for _ in range(warmup):
            step()
    spent = {name: 0.0 for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            t0 = time.perf_counter()
            for _ in range(per_round):
                step()
            spent[name] += time.perf_counter() - t0
    tokens = rounds * per_round * SIZE["batch_size"] * SIZE["context"]
    return {name: tokens / t for name, t in spent.items()}


def run(family: str, corpus: str, seconds: float, threads: int) -> dict:
    torch.set_num_threads(threads)
    trainers = {v: project_trainer(family, corpus, seconds, threads, v) for v in VARIANTS}
    baseline = Baseline(trainers["fp32"], family)

    def project_step(trainer):
        def step():
            trainer.optimizer.zero_grad(set_to_none=True)
            loss, _ = trainer.batch_loss(trainer.train_data, trainer.data_gen)
            loss.backward()
            trainer.optimizer.step()
        return step

    speeds = tokens_per_second({"baseline": baseline.step, **{f"project_{p}": project_step(t) for p, t in trainers.items()}})
    best = max(VARIANTS, key=lambda v: speeds[f"project_{v}"])
    # Equal wall-clock budget, fresh models, trained in alternating blocks (each on its own clock)
    # so that a change in the machine's load hits both; the project trainer in its fastest variant
    # (compilation time, if any, is spent inside its budget).
    trainer = project_trainer(family, corpus, seconds, threads, best)
    baseline = Baseline(trainer, family)
    val = fixed_val_batches(trainer)
    baseline_time, steps = 0.0, 0
    while baseline_time < seconds or trainer.progress() < 1.0:
        if baseline_time < seconds:
            t0 = time.perf_counter()
            for _ in range(5):
                baseline.step()
            steps += 5
            baseline_time += time.perf_counter() - t0
        for _ in range(5):
            if trainer.progress() < 1.0:
                trainer.train_step()
    return {
        "family": family, "size": SIZE, "threads": threads,
        "tokens_per_s": {k: round(v) for k, v in speeds.items()},
        "speedup": {v: round(speeds[f"project_{v}"] / speeds["baseline"], 2) for v in VARIANTS},
        "equal_budget_variant": best,
        "equal_budget_seconds": seconds,
        "val_loss": {"baseline": round(baseline.val_loss(val), 4), "project": round(project_val_loss(trainer, val), 4)},
        "steps_in_budget": {"baseline": steps, "project": trainer.step},
    }


def cpu_report() -> dict:
    """What the CPU offers for bf16 (AVX512-BF16, AMX) and what PyTorch dispatches to."""
    flags = set()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    wanted = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile", "amx_int8")
    return {"flags": [f for f in wanted if f in flags], "torch_capability": torch.backends.cpu.get_cpu_capability(),
            "threads": torch.get_num_threads()}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=60.0, help="equal wall-clock budget per trainer")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    p.add_argument("--family", choices=["gpt", "bert", "both"], default="both")
    args = p.parse_args(argv)
    print(json.dumps({"cpu": cpu_report()}), flush=True)
    for family in (["gpt", "bert"] if args.family == "both" else [args.family]):
        print(json.dumps(run(family, args.corpus, args.seconds, args.threads)), flush=True)


if __name__ == "__main__":
    main()
