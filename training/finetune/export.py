"""A fine-tuned classifier as a model-set folder the app serves like any other:

    OUT/classifiers/<arm>/vocab.json             the base model's vocabulary
                          classifier.onnx        inputs  input_ids, token_type_ids  int64 (1, T)
                                                 output  logits (1, n_labels) whole-input task,
                                                         (1, T, n_labels) per-character task
                          classifier.card.json   task, kind, labels, arm, base model, examples,
                                                 held-out accuracy, how it was trained, input format
                          set.json               {"id", "name"}

The input is "[CLS] text [SEP]" (token_type_ids all 0), the text cut to context - 2 characters;
for a per-character task, row i + 1 of the logits is character i of the text. The folder is
written aside (.<arm>.tmp) and renamed into place, after the ONNX graph has been checked against
the PyTorch model (max |difference| of the logits <= PARITY_TOLERANCE at several lengths).

Speed: tracing a graph takes 5-15 s on a busy 2-core CPU, so (as training/export/model_set.py does for
snapshots) the classifier's shape is traced once, in a process of its own started with the
fine-tunes (`start_tracer`), and each export swaps its weights into that template (~1 s); a full
export is the fallback when the template is missing or parity says otherwise.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

from ..export import OPSET, PARITY_TOLERANCE, _program, parity_lengths, save_program
from ..tokenizer import CLS, PAD, SEP

INPUT_FORMAT = ("[CLS] text [SEP], token_type_ids all 0, text cut to context - 2 characters; "
                "per-character logits: row i + 1 is character i")


class ClassifierExport(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, token_type_ids):
        return self.model(input_ids, token_type_ids)


def trace(model):
    """The traced, unoptimised program (parameters kept as initializers named model.<name>)."""
    context = model.encoder.cfg.context
    ids = torch.full((2, 6), 7, dtype=torch.long)
    ids[:, 0], ids[:, -1] = CLS, SEP
    batch, seq = torch.export.Dim("batch", min=1, max=1024), torch.export.Dim("seq", min=2, max=context)
    shapes = {"input_ids": {0: batch, 1: seq}, "token_type_ids": {0: batch, 1: seq}}
    return _program(ClassifierExport(model).eval(), (ids, torch.zeros_like(ids)),
                    ["input_ids", "token_type_ids"], ["logits"], shapes)


def template_file(cache: Path, cfg: dict, kind: str, n_labels: int) -> Path:
    import hashlib

    key = json.dumps([cfg, kind, n_labels, torch.__version__, OPSET, "mean-pooled"], sort_keys=True)
    return Path(cache) / f"classifier-{hashlib.sha256(key.encode()).hexdigest()[:16]}.onnx"


def start_tracer(cache: Path, cfg: dict, kind: str, n_labels: int):
    """Trace the classifier's shape in the background (python -m training.finetune.export ...)."""
    if template_file(cache, cfg, kind, n_labels).exists():
        return None
    return subprocess.Popen([sys.executable, "-m", "training.finetune.export", str(cache), json.dumps(cfg), kind, str(n_labels)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def trace_template(cache: Path, cfg: dict, kind: str, n_labels: int) -> None:
    import onnx_ir as ir

    from .model import Classifier, Encoder
    from ..model import TransformerConfig

    model = Classifier(Encoder(TransformerConfig(**cfg)), n_labels, kind).eval()
    path = template_file(cache, cfg, kind, n_labels)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    ir.save(trace(model).model, str(tmp))
    tmp.replace(path)


def export_onnx(model, path: Path, cache: Path | None = None, tracer=None) -> None:
    """Swap the weights into the cached template when there is one, else trace here."""
    import onnx_ir as ir

    template = None
    if cache is not None:
        cached = template_file(cache, model.encoder.cfg.to_dict(), model.kind, model.head.classifier.out_features)
        if not cached.exists() and tracer is not None:
            tracer.wait()
        if cached.exists():
            try:
                template = torch.onnx.ONNXProgram(ir.load(str(cached)), None)
            except Exception:  # an unreadable cache entry: trace here instead
                template = None
    with torch.no_grad():
        if template is None:
            save_program(trace(model), path)
            return
        weights = {f"model.{k}": v for k, v in model.state_dict().items()}
        template.apply_weights({k: v for k, v in weights.items() if k in template.model.graph.initializers})
        save_program(template, path)


@torch.no_grad()
def check_parity(model, path: Path, vocab_size: int, seed: int = 0) -> dict:
    """Max |ONNX - PyTorch| of the logits over several lengths, one example at a time (as served)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    gen = torch.Generator().manual_seed(seed)
    report = {}
    model.eval()
    for T in parity_lengths(model.encoder.cfg.context):
        T = max(T, 3)
        ids = torch.randint(5, vocab_size, (1, T), generator=gen)
        ids[0, 0], ids[0, -1] = CLS, SEP
        seg = torch.zeros_like(ids)
        ref = model(ids, seg).numpy()
        out = sess.run(["logits"], {"input_ids": ids.numpy(), "token_type_ids": seg.numpy()})[0]
        report[f"len_{T}"] = float(np.abs(out - ref).max())
    report["max_abs_diff"] = max(report.values())
    report["ok"] = report["max_abs_diff"] <= PARITY_TOLERANCE
    return report


def write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def export_classifier(model, out: Path, arm: str, card: dict, vocab_file: Path, set_id: str, set_name: str,
                      cache: Path | None = None, tracer=None) -> dict:
    """Write OUT/classifiers/<arm>/ (aside, then renamed into place); returns the card written."""
    root = Path(out) / "classifiers"
    root.mkdir(parents=True, exist_ok=True)
    tmp, final = root / f".{arm}.tmp", root / arm
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    path = tmp / "classifier.onnx"
    export_onnx(model, path, cache, tracer)
    vocab = json.loads(Path(vocab_file).read_text(encoding="utf-8"))
    parity = check_parity(model, path, len(vocab["specials"]) + len(vocab["chars"]))
    if not parity["ok"] and cache is not None:  # the template disagreed: a full export
        export_onnx(model, path)
        parity = check_parity(model, path, len(vocab["specials"]) + len(vocab["chars"]))
    if not parity["ok"]:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RuntimeError(f"classifier ONNX parity check failed: {json.dumps(parity)}")
    shutil.copyfile(vocab_file, tmp / "vocab.json")
    card = card | {"name": "classifier", "family": "classifier", "arm": arm, "input": INPUT_FORMAT,
                   "config": model.encoder.cfg.to_dict(), "pad_id": PAD,
                   "onnx": {"file": "classifier.onnx", "bytes": path.stat().st_size, "opset": OPSET,
                            "inputs": ["input_ids", "token_type_ids"], "outputs": ["logits"],
                            "parity_max_abs_diff": parity["max_abs_diff"]}}
    write_json(tmp / "classifier.card.json", card)
    write_json(tmp / "set.json", {"id": set_id, "name": set_name})
    if final.exists():
        old = root / f".{arm}.old"
        shutil.rmtree(old, ignore_errors=True)
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, final)
    return card


if __name__ == "__main__":  # the tracer: python -m training.finetune.export CACHE '{config}' KIND N_LABELS
    torch.set_num_threads(1)
    trace_template(Path(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
