"""T5's entry in the family table: span corruption as a prefix language model (the model, its
objective, export, evaluation and live view: training/t5.py). 15 % of a line hidden in spans of 3
characters on average, each behind a sentinel; the model writes the spans back.

Defaults not yet measured on the short protocol (benchmarks/recipe.py knows GPT and BERT): GPT's
optimizer at BERT's cautious peak (it is trained like GPT, one next token at a time, on a third of
the tokens GPT is scored on), no dropout.
"""
from . import Family

FAMILY = Family(
    "t5", model="training.t5:T5", objective="training.t5:SpanCorruption",
    defaults={"lr": 3e-3, "warmup": 100, "optimizer": "adamw", "dropout": 0.0},
    preset={"lr_scale": 0.3, "min_warmup": 100, "optimizer": "adamw"},
    objective_text=lambda tc: "span corruption (15 % of the characters hidden in spans of 3 on average, "
                              "written back after sentinels)",
    export="training.t5:T5Export", program_ref="training.export:plain_program", evaluate="training.t5:evaluate_t5",
    eval_size={"n_windows": 1000}, live="training.t5:t5_fill", inspected=True,
    feeds="training.t5:FEEDS", web_check="training.export.web_checks:check_t5")
