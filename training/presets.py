"""Budget presets: model size and schedule chosen for a wall-clock budget (1, 3, 10 minutes).

Interface (used by `--minutes` alone, by `python -m training live` and by the app's /train page):
    preset_names() -> list of names
    preset_config(name_or_minutes, family, corpus_chars) -> dict of TrainConfig fields
"""
from __future__ import annotations

# Placeholder values until the recipe work measures better ones.
PRESETS: dict[str, dict] = {
    "1min": {"minutes": 1.0, "n_layer": 2, "n_head": 4, "n_embd": 96, "n_ff": 256, "context": 64,
             "batch_size": 32, "lr": 3e-3, "warmup": 30},
    "3min": {"minutes": 3.0, "n_layer": 2, "n_head": 4, "n_embd": 128, "n_ff": 384, "context": 96,
             "batch_size": 32, "lr": 3e-3, "warmup": 50},
    "10min": {"minutes": 10.0, "n_layer": 3, "n_head": 4, "n_embd": 160, "n_ff": 512, "context": 128,
              "batch_size": 32, "lr": 2e-3, "warmup": 100},
}


def preset_names() -> list[str]:
    return list(PRESETS)


def preset_config(name_or_minutes: str | float, family: str, corpus_chars: int | None = None) -> dict:
    """TrainConfig overrides for a preset name ("3min") or a budget in minutes (nearest preset)."""
    if isinstance(name_or_minutes, str):
        if name_or_minutes not in PRESETS:
            raise ValueError(f"unknown preset {name_or_minutes!r}; choose one of {', '.join(PRESETS)}")
        cfg = dict(PRESETS[name_or_minutes])
    else:
        minutes = float(name_or_minutes)
        name = min(PRESETS, key=lambda n: abs(PRESETS[n]["minutes"] - minutes))
        cfg = {**PRESETS[name], "minutes": minutes}
    return cfg
