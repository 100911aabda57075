"""PLM's entry in the family table: permutation language modelling, XLNet's worldview, with its
two streams as one sequence and one mask (the model, objective, export, evaluation and live view:
training/plm.py). The last 15 % of a random order of each line is predicted, each character from
the ones earlier in that order.

Defaults not yet measured on the short protocol (benchmarks/recipe.py knows GPT and BERT): BERT's,
whose task (15 % of a line guessed from both sides) it is closest to, with AdamW.
"""
from . import Family

FAMILY = Family(
    "plm", model="training.plm:PLM", objective="training.plm:PermutationLM",
    defaults={"lr": 3e-3, "warmup": 100, "optimizer": "adamw", "dropout": 0.0},
    preset={"lr_scale": 0.3, "min_warmup": 100, "optimizer": "adamw"},
    objective_text=lambda tc: "permutation language modelling (a random order per line; its last 15 % predicted, "
                              "two streams)",
    export="training.plm:PLMExport", program_ref="training.export:plain_program", evaluate="training.plm:evaluate_plm",
    eval_size={"n_windows": 1000}, live="training.plm:plm_fill", inspected=True,
    feeds="training.plm:FEEDS", web_check="training.export.web_checks:check_plm")
