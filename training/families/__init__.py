"""The family table: what differs between GPT, BERT and ELECTRA, one entry each, each in a file of
its own named by the family's spec (app/contract/families.py): training/families/<name>.py.

The training loop, the CLI, live runs, export and the model-set writer read a family from here
and never test its name. An entry names (as "module:attribute", imported on first use, so these
files and the presets stay importable without torch):

    model       the nn.Module class, built from a TransformerConfig (model.py, electra.py)
    objective   a batch in, loss and its parts out (objectives.py)
    defaults    TrainConfig fields measured for the family (lr, warmup, optimizer, dropout)
    preset      how a budget preset scales for it (presets.py): lr_scale, min_warmup, optimizer
    card        the model card's objective text (its attention is the spec's, declared once)
    export      the wrapper module that the ONNX graph traces; io names come from app.contract
    evaluate    held-out metrics (and the size argument package passes)
    live        what the live run shows every ~10 s (a sample, a fill, a detection)
    live_metric a held-out number measured at each live evaluation (training/live/metrics.py)
    inspected   package writes its attention inspection graph;  web_check: its fp16 web copy's check
    masked      its objective hides characters;  long_run: its own `--preset long` settings
    feeds       example values of its graph's own inputs for the parity checks (export/__init__.py parity_inputs)

A fine-tune is not an entry here: it is a pretrained BERT backbone plus a named head
(training/finetune/model.py: a whole-input classifier on the mean of the encoder's positions, or a
per-character head, in the manner of Hugging Face's BertForSequenceClassification and
BertForTokenClassification), trained by the fine-tune loop (training/finetune/loop.py).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

from app.contract import SPECS, onnx_io


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
    feeds: str = ""  # "module:dict" of its own graph inputs -> f(ids (B, T), generator) -> tensor (parity checks)

    @property
    def attention(self) -> str:
        # declared once, in the spec (the server and the pages read it there): the card says the same
        return SPECS[self.name].attention

    def example_feeds(self) -> dict:
        return _load(self.feeds) if self.feeds else {}

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


# No registration here: every family the contract declares (app/contract/families.py, its one
# registration line) names its entry (`trainer`: FAMILY in training/families/<name>.py), in the specs' order.
FAMILIES: dict[str, Family] = {name: _load(spec.trainer) for name, spec in SPECS.items()}


def family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"unknown family {name!r}; choose one of {', '.join(FAMILIES)}") from None


def build_model(name: str, model_cfg):
    return family(name).build(model_cfg)
