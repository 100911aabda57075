"""A live run's settings: its constants, the TrainConfig of each family, the equivalent command
lines, and the Stop that a signal raises. Torch-free (the `start` event comes before torch)."""
from __future__ import annotations

import json
import shlex
from pathlib import Path

from app.contract import CHECKPOINTS_DIR

from ..families import family as family_entry

SNAPSHOT_FRACTIONS = (0.0, 0.01, 0.05, 0.2, 0.5)  # of the budget; plus final/
PROGRESS_EVERY_S = 1.0
SAMPLE_EVERY_S = 10.0
SAMPLE_CHARS, SAMPLE_SEED, SAMPLE_TEMPERATURE = 160, 7, 0.8
FILL_SEED = 11
DEFAULT_CORPUS = Path(__file__).parents[1] / "corpus" / "shakespeare"  # = data.DEFAULT_CORPUS, without torch


class Stop(Exception):
    pass


def family_configs(args, families, corpus_path: Path, corpus_chars: int, run_dir: Path) -> dict:
    from dataclasses import fields

    from ..presets import preset_config
    from ..train import TrainConfig

    names = {f.name for f in fields(TrainConfig)}
    overrides = json.loads(args.overrides) if args.overrides else {}
    bad = set(overrides) - names
    if bad:
        raise ValueError(f"--overrides: unknown TrainConfig fields {sorted(bad)}")
    configs = {}
    for family in families:
        values = {"steps": 10**9, "eval_batches": 8}
        values.update(preset_config(args.preset or float(args.minutes), family, corpus_chars))
        if args.minutes is not None:
            values["minutes"] = float(args.minutes)
        values.update(overrides)
        values.update(family=family, corpus=str(corpus_path), out=str(run_dir / CHECKPOINTS_DIR),
                      seed=args.seed, threads=args.threads, device=getattr(args, "device", "auto"))
        configs[family] = TrainConfig(**{k: v for k, v in values.items() if k in names})
    return configs


def command_lines(args, configs: dict, run_dir: Path) -> dict:
    live = ["python", "-m", "training", "live", "--out", str(run_dir), "--corpus", str(args.corpus_used),
            "--families", ",".join(configs), "--seed", str(args.seed)]
    if args.minutes is not None:
        live += ["--minutes", f"{args.minutes:g}"]
    if args.preset:
        live += ["--preset", args.preset]
    if args.overrides:
        live += ["--overrides", args.overrides]
    out = {"live": shlex.join(live)}
    for family, c in configs.items():
        cmd = ["python", "-m", "training", "train", family, "--corpus", c.corpus, "--out", f"runs/{family}"]
        for name in ("n_layer", "n_head", "n_embd", "n_ff", "context", "batch_size", "lr", "warmup", "seed"):
            cmd += ["--" + name.replace("_", "-"), f"{getattr(c, name):g}" if isinstance(getattr(c, name), float) else str(getattr(c, name))]
        cmd += ["--minutes", f"{c.minutes:g}"] + (["--steps", str(c.steps)] if c.steps < 10**9 else [])
        if family_entry(family).uses_nsp and not c.nsp:
            cmd.append("--no-nsp")
        if c.masking != "char":
            cmd += ["--masking", c.masking]
        out[family] = shlex.join(cmd)
        out[f"{family}_extend"] = shlex.join(["python", "-m", "training", "train", family, "--resume",
                                              str(run_dir / CHECKPOINTS_DIR / f"{family}.pt"), "--minutes", f"{2 * c.minutes:g}"])
    return out
