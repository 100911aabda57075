"""The family table: what differs between GPT, BERT and ELECTRA, one entry each.

The training loop, the CLI, live runs, export and the model-set writer read a family from here
and never test its name. An entry names (as "module:attribute", imported on first use, so this
file and the presets stay importable without torch):

    model       the nn.Module class, built from a TransformerConfig (model.py, electra.py)
    objective   a batch in, loss and its parts out (objectives.py)
    defaults    TrainConfig fields measured for the family (lr, warmup, optimizer, dropout)
    preset      how a budget preset scales for it (presets.py): lr_scale, min_warmup, optimizer
    card        the model card's objective text and attention
    export      the wrapper module that the ONNX graph traces; io names come from app.contract
    evaluate    held-out metrics (and the size argument package passes)
    live        what the live run shows every ~10 s (a sample, a fill, a detection)
    live_metric a held-out number measured at each live evaluation (training/live/metrics.py)

A fine-tune is not an entry here: it is a pretrained BERT backbone plus a named head
(training/finetune/model.py: a whole-input classifier on the mean of the encoder's positions, or a
per-character head, in the manner of Hugging Face's BertForSequenceClassification and
BertForTokenClassification), trained by the fine-tune loop (training/finetune/loop.py).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

from app.contract import onnx_io


def _load(ref: str):
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Family:
    name: str
    model: str
    objective: str
    defaults: dict
    preset: dict
    objective_text: Callable[[dict], str]  # train config -> the card's "objective"
    attention: str
    export: str  # the ONNX wrapper class
    program_ref: str  # its traced graph: export.gpt_program (with a cache) or export.plain_program
    evaluate: str
    eval_size: dict = field(default_factory=dict)  # package's evaluation size
    live: str = ""  # live view: f(model, tok, prompt, probe, positions) -> dict
    uses_nsp: bool = False  # its set may carry the NSP quiz bank
    live_metric: str = ""  # f(tok, held-out docs, train config) -> measure(model) -> {name: value}
    inspected: bool = False  # package writes its attention inspection graph (training/inspect_export.py)
    web_check: str = ""  # the browser's engine runs it: its fp16 web copy's check (training/export/web.py)
    masked: bool = False  # its objective hides characters (the card says the mask rate and masking)
    long_run: dict = field(default_factory=dict)  # its settings in `--preset long` beyond the shared ones (presets.py)

    def model_class(self):
        return _load(self.model)

    def build(self, model_cfg):
        return self.model_class()(model_cfg)

    def make_objective(self, cfg, tok):
        return _load(self.objective)(cfg, tok)

    def io(self, n_layer: int) -> tuple[list[str], list[str]]:
        return onnx_io(self.name, n_layer)

    def card(self, tc: dict) -> dict:
        return {"objective": self.objective_text(tc), "attention": self.attention}

    def export_wrapper(self):
        return _load(self.export)

    def program(self):
        return _load(self.program_ref)

    def evaluator(self):
        return _load(self.evaluate)

    def web_checker(self):
        return _load(self.web_check)

    def live_view(self):
        return _load(self.live)

    def live_measure(self, tok, docs, cfg):
        """measure(model) -> {name: value} of held-out numbers, or None when the family has none."""
        return _load(self.live_metric)(tok, docs, cfg) if self.live_metric else None


def _mlm_text(tc: dict) -> str:
    masking = {"char": "", "span": ", spans", "word": ", whole words"}[tc.get("masking", "char")]
    return f"masked language modelling (15 %{masking}, 80/10/10)" + (" + next-sentence prediction" if tc.get("nsp", True) else "")


# Defaults measured on the short protocol (`python benchmarks/recipe.py`: 2 layers, width 96,
# batch 48, 600 GPT / 1,500 BERT steps, one run each). GPT validation perplexity: old defaults
# (2e-3, cosine to 0.1, warmup 100) 6.25; AdamW 3e-3 cosine to 0: 5.86; Muon 3e-3: 5.57; AdamW 1e-2
# WSD to 0: 5.13 (weight decay 0: 5.13; decaying over half the run: 5.16; Muon at 1e-2: 5.64 and
# with its matrices at 0.3x: 5.55); 1.4e-2 with warmup 60: 5.05; 2e-2: diverged (10.4). 1e-2 keeps
# a 2x margin from divergence on text not seen here. BERT stays on the unigram plateau at 5e-3 and
# 1e-2 (masked top-1 0.18 and 0.16), so it gets a lower peak and a longer warmup.
# BERT at 3e-3, WSD, warmup 100: AdamW 0.605, Muon for the hidden matrices 0.691 masked top-1.
# GPT dropout 0.1 (the 72K-character protocol repeats its text ~25 times): Shakespeare 5.19 vs 5.13
# without, but the stdlib excerpt 9.47 vs 10.45 without (old defaults there: 9.55).
# ELECTRA: BERT's recipe (its generator is a BERT; not tuned separately).
FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("gpt", model="training.model:GPT", objective="training.objectives:CausalLM",
           defaults={"lr": 1e-2, "warmup": 30, "optimizer": "adamw", "dropout": 0.1},
           preset={"lr_scale": 1.0, "min_warmup": 0, "optimizer": "adamw"},
           objective_text=lambda tc: "causal language modelling (next character)", attention="causal",
           export="training.export:GPTExport", program_ref="training.export:gpt_program", evaluate="training.evaluate:evaluate_gpt",
           eval_size={"max_chars": 400_000}, live="training.live.views:gpt_sample", inspected=True,
           web_check="training.export.web:check_gpt"),
    Family("bert", model="training.model:BERT", objective="training.objectives:MaskedLM",
           defaults={"lr": 3e-3, "warmup": 100, "optimizer": "muon", "dropout": 0.0},
           preset={"lr_scale": 0.3, "min_warmup": 100, "optimizer": "muon"},
           objective_text=_mlm_text, attention="bidirectional",
           export="training.export:BERTExport", program_ref="training.export:plain_program", evaluate="training.evaluate:evaluate_bert",
           eval_size={"n_pairs": 2000}, live="training.live.views:bert_fill", uses_nsp=True, inspected=True,
           live_metric="training.live.metrics:bert_masked_top1", web_check="training.export.web:check_bert", masked=True,
           long_run={"context": 128, "lr": 3e-3, "dropout": 0.0, "steps": 6800, "schedule": "cosine", "min_lr_ratio": 0.1}),
    Family("electra", model="training.electra:ELECTRA", objective="training.electra:ReplacedTokenDetection",
           defaults={"lr": 3e-3, "warmup": 100, "optimizer": "muon", "dropout": 0.0},
           preset={"lr_scale": 0.3, "min_warmup": 100, "optimizer": "muon"},
           objective_text=lambda tc: "replaced-token detection (a half-width generator fills 15 % masked "
                                     "characters; the discriminator says original or replaced at every character)",
           attention="bidirectional", export="training.electra:ELECTRAExport", program_ref="training.export:plain_program",
           evaluate="training.electra:evaluate_electra", eval_size={"n_rows": 400}, live="training.electra:live_view",
           masked=True, long_run={"context": 128, "lr": 1e-3, "warmup": 100, "dropout": 0.0, "steps": 3000,
                                  "optimizer": "adamw", "schedule": "cosine", "min_lr_ratio": 0.1}),
)}


def family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"unknown family {name!r}; choose one of {', '.join(FAMILIES)}") from None


def build_model(name: str, model_cfg):
    return family(name).build(model_cfg)
