"""GPT's entry in the family table: causal language modelling, the next character from the ones
before it (the model: training/model.py GPT; its objective: training/objectives.py CausalLM).

Defaults measured on the short protocol (`python benchmarks/recipe.py`: 2 layers, width 96, batch
48, 600 steps, one run each), validation perplexity: old defaults (2e-3, cosine to 0.1, warmup 100)
6.25; AdamW 3e-3 cosine to 0: 5.86; Muon 3e-3: 5.57; AdamW 1e-2 WSD to 0: 5.13 (weight decay 0:
5.13; decaying over half the run: 5.16; Muon at 1e-2: 5.64 and with its matrices at 0.3x: 5.55);
1.4e-2 with warmup 60: 5.05; 2e-2: diverged (10.4). 1e-2 keeps a 2x margin from divergence on text
not seen here. Dropout 0.1 (the 72K-character protocol repeats its text ~25 times): Shakespeare
5.19 vs 5.13 without, but the stdlib excerpt 9.47 vs 10.45 without (old defaults there: 9.55).
"""
from . import Family

FAMILY = Family(
    "gpt", model="training.model:GPT", objective="training.objectives:CausalLM",
    defaults={"lr": 1e-2, "warmup": 30, "optimizer": "adamw", "dropout": 0.1},
    preset={"lr_scale": 1.0, "min_warmup": 0, "optimizer": "adamw"},
    objective_text=lambda tc: "causal language modelling (next character)",
    export="training.export:GPTExport", program_ref="training.export:gpt_program", evaluate="training.evaluate:evaluate_gpt",
    eval_size={"max_chars": 400_000}, live="training.live.views:gpt_sample", inspected=True,
    web_check="training.export.web_checks:check_gpt")
