"""Budget presets: model size and schedule chosen for a wall-clock budget (1, 3, 10 minutes), and
the step-bounded long run (`--preset long`: the shipped size at its ceiling, 1.5-4 minutes each on one H200).

Interface (used by `--minutes` alone, by `python -m training live` and by the app's /train page):
    preset_names() -> list of names
    preset_config(name_or_minutes, family, corpus_chars) -> dict of TrainConfig fields

Why these values (measured on one shared CPU thread, see benchmarks/recipe.py):
- AdamW at a high peak with warmup-stable-decay to 0: in a few hundred steps the peak rate is the
  biggest lever (see FAMILY_DEFAULTS in train.py: Muon was better than AdamW at 3e-3 but worse than
  AdamW at its own best rate, and slower per step on a CPU); WSD ends on the budget whatever the
  machine's speed turns out to be.
- Small models for short budgets: width and depth grow with the budget, and the peak rate shrinks
  as the width grows (roughly 1/width, as muP suggests).
- No dropout: a run this short never sees the data twice.
The run ends on the clock (steps is set out of reach), so the same preset fits any machine.

Measured (`python -m benchmarks.presets --budgets 1`, one CPU-minute each on one thread,
one run, a 2-core machine shared with other jobs; CPU flags avx512_bf16, no AMX):
    budget corpus       model metric          preset baseline    delta
        1m shakespeare  gpt   nats_per_char   1.8180   2.0927  -0.2747  met
        1m shakespeare  bert  masked_top1     0.4560   0.2434  +0.2126  met
        1m stdlib       gpt   nats_per_char   1.7371   1.9347  -0.1976  met
        1m stdlib       bert  masked_top1     0.5411   0.4255  +0.1156  met
        3m shakespeare  gpt   nats_per_char   1.6993   1.8123  -0.1130  met
(BERT on AdamW instead of Muon: +0.0977 on shakespeare, but -0.0247 on stdlib at 3e-3 and -0.0041
at 1.5e-3: Muon is what makes the BERT preset beat the baseline on both corpora.)
The rest of the 3-minute and all of the 10-minute rows were not run (rates follow the 1/width rule).
"""
from __future__ import annotations

from app.contract import MIN_CORPUS_CHARS

# Shared by every preset: the recipe; each preset adds its size and schedule.
RECIPE = {"optimizer": "adamw", "schedule": "wsd", "decay_frac": 0.3, "min_lr_ratio": 0.0, "dropout": 0.0,
          "steps": 10**9}

PRESETS: dict[str, dict] = {
    "1min": {"minutes": 1.0, "n_layer": 2, "n_head": 4, "n_embd": 96, "n_ff": 256, "context": 64,
             "batch_size": 48, "lr": 1e-2, "warmup": 30, "eval_interval": 100},
    "3min": {"minutes": 3.0, "n_layer": 2, "n_head": 4, "n_embd": 128, "n_ff": 384, "context": 64,
             "batch_size": 48, "lr": 7e-3, "warmup": 50, "eval_interval": 200},
    "10min": {"minutes": 10.0, "n_layer": 3, "n_head": 4, "n_embd": 160, "n_ff": 512, "context": 96,
              "batch_size": 48, "lr": 5e-3, "warmup": 100, "eval_interval": 500},
}
# The long run: the shipped size trained to its ceiling, bounded by steps (not a clock), so it is the
# same run on any machine: 1.5-4 minutes each on one H200 (bf16, `--device auto`), about 16 hours on a
# 2-core CPU. Why dropout here and none in the budget presets: dropout only pays once a run sees the
# corpus more than ~3 times. Measured with this project's Trainer on one H100 (issue #33; the
# shipped Shakespeare corpus is ~5 M characters, so 24 M tokens is ~5 passes, 150 M+ is ~30):
#   GPT 4 layers, width 192, context 256, 6.5 GPU-minutes (~150-230 M tokens), validation nats/char:
#     dropout 0, batch 64, lr 2e-3 -> 1.476 (best ~1.43 mid-run, then overfits); dropout 0.1 -> 1.320;
#     dropout 0.2 -> 1.326; dropout 0.2, batch 128, lr 3e-3 (232 M tokens) -> 1.302 (this preset)
#   the same GPT at CPU budgets: 24 M tokens: dropout 0 -> 1.443, dropout 0.1 -> 1.463 (too few passes
#     for dropout to pay); 48 M tokens: dropout 0.1 -> 1.382, dropout 0.2 + batch 128 -> 1.440
#   BERT context 128, batch 128, Muon 3e-3, 112 M tokens: dropout 0 -> masked top-1 0.787, NSP 0.804;
#     dropout 0.1 -> 0.778, NSP 0.813; context 256 -> 0.762
# Then (issue #39, one H200, this preset's commands at 365bb1c, the project's evaluator, validation plays):
#   GPT cosine to 0.1 -> 1.343 nats/char; warmup-stable-decay (last 30 %) to 0 -> 1.317 (this preset):
#     the schedule, not the data, held it back: a rate that ends at zero settles into the minimum
#   BERT dropout 0.1 -> masked top-1 0.773, NSP 0.823; dropout 0 -> 0.786, NSP 0.8225 (this preset):
#     at 112 M tokens (~20 passes of its 128-character windows) dropout costs masked top-1 and buys
#     no NSP; BERT keeps cosine to 0.1, the schedule those figures were measured with
#   bf16 autocast is not what limits either: fp32 runs were about twice as slow per step
# ELECTRA starts from a trained BERT (`--init-from`), as the shipped one (docs/models.md).
LONG_RUNS: dict[str, dict] = {
    "long": {"minutes": 0.0, "n_layer": 4, "n_head": 6, "n_embd": 192, "n_ff": 768, "context": 256,
             "batch_size": 128, "lr": 3e-3, "warmup": 200, "dropout": 0.2, "steps": 7000, "eval_interval": 500,
             "schedule": "wsd", "decay_frac": 0.3, "min_lr_ratio": 0.0},
}
# Each family's own long-run settings beyond these (BERT's context, dropout 0 and cosine; ELECTRA's
# AdamW and 3,000 steps) are its entry's `long_run` in training/families/<name>.py, measured as above.

# How a preset scales for each family is its table entry's "preset" (training/families/): BERT
# learns from 15 % of its positions only and, at GPT's peak rates (5e-3 and 1e-2 measured), stays
# on the unigram plateau (masked top-1 0.18): a third of GPT's peak and a longer warmup; and Muon
# (hidden matrices) + AdamW: masked top-1 0.69 vs AdamW's 0.61 on the 1,500-step protocol.


def preset_names(long: bool = False) -> list[str]:
    """The budget presets (the Train page's); with long=True also the step-bounded long runs (the CLI's)."""
    return list(PRESETS) + (list(LONG_RUNS) if long else [])


def preset_config(name_or_minutes: str | float, family: str = "gpt", corpus_chars: int | None = None) -> dict:
    """TrainConfig overrides for a preset name ("3min") or a budget in minutes (nearest preset,
    with that many minutes). corpus_chars: the corpus's size; the context shrinks to fit a small
    corpus, and a corpus too small to train on is a ValueError that says so."""
    from .families import family as family_entry

    scale = family_entry(family).preset
    if name_or_minutes in LONG_RUNS:  # explicit per-family values, no budget scaling
        cfg = {**RECIPE, **LONG_RUNS[name_or_minutes], "optimizer": scale["optimizer"]}
        cfg.update(family_entry(family).long_run)
        return fit_to_corpus(cfg, int(corpus_chars)) if corpus_chars is not None else cfg
    if isinstance(name_or_minutes, str) and name_or_minutes not in PRESETS:
        try:
            name_or_minutes = float(name_or_minutes.removesuffix("min"))
        except ValueError:
            raise ValueError(f"unknown preset {name_or_minutes!r}; choose one of {', '.join(PRESETS)} "
                             "or a number of minutes") from None
    if isinstance(name_or_minutes, str):
        cfg = {**RECIPE, **PRESETS[name_or_minutes]}
    else:
        minutes = float(name_or_minutes)
        if not minutes > 0:
            raise ValueError(f"a budget must be a positive number of minutes, not {name_or_minutes!r}")
        name = min(PRESETS, key=lambda n: abs(PRESETS[n]["minutes"] - minutes))
        cfg = {**RECIPE, **PRESETS[name], "minutes": minutes}
    cfg["lr"] *= scale["lr_scale"]
    cfg["warmup"] = max(cfg["warmup"], scale["min_warmup"])
    cfg["optimizer"] = scale["optimizer"]
    if corpus_chars is not None:
        fit_to_corpus(cfg, int(corpus_chars))
    return cfg


def fit_to_corpus(cfg: dict, corpus_chars: int) -> dict:
    """Shrink the context (never below 16) so that the held-out text (about a tenth of the corpus)
    holds at least ten windows."""
    if corpus_chars < MIN_CORPUS_CHARS:
        raise ValueError(f"the corpus has {corpus_chars:,} characters; training needs at least "
                         f"{MIN_CORPUS_CHARS:,} (and more than 100,000 for a model worth looking at)")
    while cfg["context"] > 16 and cfg["context"] * 100 > corpus_chars:
        cfg["context"] = max(16, cfg["context"] // 2)
    return cfg


SIZE_FIELDS = ("n_layer", "n_head", "n_embd", "n_ff", "context")


def with_preset(values: dict, preset: str | None = None) -> dict:
    """TrainConfig fields for the command line: `values` holds the fields the user gave.

    A preset applies when named, or when a wall-clock budget (minutes) is given without a step
    budget. The user's fields win; if any size field is given the preset's size is left out
    altogether (a preset's width with another head count may not even divide)."""
    if preset is None and not (values.get("minutes") and "steps" not in values):
        return values
    from .data import read_documents

    chars = sum(len(d.text) for d in read_documents(values["corpus"])) if values.get("corpus") else None
    cfg = preset_config(preset if preset is not None else values["minutes"], values.get("family", "gpt"), chars)
    if preset is not None and "minutes" not in values and "steps" in values:
        cfg.pop("minutes")  # a named preset with --steps: the step budget only
    if any(f in values for f in SIZE_FIELDS):
        cfg = {k: v for k, v in cfg.items() if k not in SIZE_FIELDS}
    return {**cfg, **values}
