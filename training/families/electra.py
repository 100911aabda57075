"""ELECTRA's entry in the family table: replaced-token detection (its model, objective, export,
evaluation and live view: training/electra.py). BERT's recipe (its generator is a BERT; not tuned
separately); its long run starts from a trained BERT (`--init-from`) with AdamW for 3,000 steps.
"""
from . import Family

FAMILY = Family(
    "electra", model="training.electra:ELECTRA", objective="training.electra:ReplacedTokenDetection",
    defaults={"lr": 3e-3, "warmup": 100, "optimizer": "muon", "dropout": 0.0},
    preset={"lr_scale": 0.3, "min_warmup": 100, "optimizer": "muon"},
    objective_text=lambda tc: "replaced-token detection (a half-width generator fills 15 % masked "
                              "characters; the discriminator says original or replaced at every character)", export="training.electra:ELECTRAExport", program_ref="training.export:plain_program",
    evaluate="training.electra:evaluate_electra", eval_size={"n_rows": 400}, live="training.electra:live_view",
    masked=True, long_run={"context": 128, "lr": 1e-3, "warmup": 100, "dropout": 0.0, "steps": 3000,
                           "optimizer": "adamw", "schedule": "cosine", "min_lr_ratio": 0.1})
