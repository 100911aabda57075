"""BERT's entry in the family table: masked language modelling (15 %, 80/10/10) and next-sentence
prediction (the model: training/model.py BERT; its objective: training/objectives.py MaskedLM).

Defaults measured on the short protocol (`python benchmarks/recipe.py`: 2 layers, width 96, batch
48, 1,500 steps): BERT stays on the unigram plateau at GPT's 5e-3 and 1e-2 (masked top-1 0.18 and
0.16), so it gets a lower peak and a longer warmup; at 3e-3, WSD, warmup 100: AdamW 0.605, Muon for
the hidden matrices 0.691 masked top-1. Its long run (`--preset long`, presets.py): context 128,
no dropout and cosine to 0.1, measured on one H200 (issue 39: dropout 0.1 -> 0.773, 0 -> 0.786).
"""
from . import Family


def _mlm_text(tc: dict) -> str:
    masking = {"char": "", "span": ", spans", "word": ", whole words"}[tc.get("masking", "char")]
    return f"masked language modelling (15 %{masking}, 80/10/10)" + (" + next-sentence prediction" if tc.get("nsp", True) else "")


FAMILY = Family(
    "bert", model="training.model:BERT", objective="training.objectives:MaskedLM",
    defaults={"lr": 3e-3, "warmup": 100, "optimizer": "muon", "dropout": 0.0},
    preset={"lr_scale": 0.3, "min_warmup": 100, "optimizer": "muon"},
    objective_text=_mlm_text,
    export="training.export:BERTExport", program_ref="training.export:plain_program", evaluate="training.evaluate:evaluate_bert",
    eval_size={"n_pairs": 2000}, live="training.live.views:bert_fill", uses_nsp=True, inspected=True,
    live_metric="training.live.metrics:bert_masked_top1", web_check="training.export.web_checks:check_bert", masked=True,
    long_run={"context": 128, "lr": 3e-3, "dropout": 0.0, "steps": 6800, "schedule": "cosine", "min_lr_ratio": 0.1})
