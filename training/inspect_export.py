"""Inspection graphs: the attention weights of every layer and head, as ONNX outputs.

The served graphs do not expose attention weights: gpt.onnx runs each layer's attention as ONE
fused onnxruntime node (GroupQueryAttention, for the in-place KV cache), and bert.onnx's softmax
is internal. For the attention page we export a second, read-only graph per model:

    <family>.attn.onnx  inputs  the served graph's, less a cache (gpt: input_ids; bert: input_ids,
                                token_type_ids; t5: input_ids, prefix_mask; plm: input_ids,
                                position_ids, ranks), each (1, seq)
                        outputs logits (1, seq, vocab)  the same logits as the served graph
                                                     (its first output), so the app can check
                                                     the two agree
                            attn_<i> (1, n_head, seq, seq), i = 0 .. n_layer-1: layer i's
                                                     softmax(q k^T / sqrt(hs) + mask), rows = queries

`Inspect` walks the model's own modules (embeddings, LayerNorms, qkv, proj, MLP, final norm,
head) with the attention written out, the mask being the model's own (its `reading`: positions,
segments and who may attend to whom, from the same inputs as its forward), so training/model.py's teaching path stays as it is; the
checks below hold its logits to the model's forward and its weights to the softmax recomputed
from the model's own per-layer inputs (forward hooks), both within PARITY_TOLERANCE.

The shipped checkpoints are not in the repository, so for an existing model set the weights are
read back out of <family>.onnx (`model_from_onnx`: every parameter, by the module path the
exporter recorded on each node), the rebuilt PyTorch model is checked against that ONNX file's
own logits, and the inspection graph is exported from it:

    python -m training.inspect_export models/                 # from the ONNX files in the set
    python -m training.inspect_export models/ --gpt runs/gpt/ckpt.pt --bert runs/bert/ckpt.pt
"""
from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from app.contract import SPECS

from .export import OPSET, PARITY_TOLERANCE, empty_cache, parity_inputs, parity_lengths
from .families import FAMILIES, build_model
from .model import TransformerConfig
from .onnx_meta import strip_ir

PAD_ID = 0  # training/tokenizer.py: specials come first, [PAD] = 0


def attn_names(n_layer: int) -> list[str]:
    return [f"attn_{i}" for i in range(n_layer)]


def inspected_families() -> list[str]:
    """The families that get an inspection graph (their entry's `inspected`, training/families/)."""
    return [name for name, f in FAMILIES.items() if f.inspected]


def inspection_inputs(family: str, n_layer: int) -> list[str]:
    """The inspection graph's inputs: the served graph's, less a key/value cache (GPT's)."""
    return [n for n in SPECS[family].inputs(n_layer) if n != "past_length" and not n.startswith("past_")]


def example_inputs(names: list[str], T: int, vocab_size: int, gen: torch.Generator, family: str) -> dict[str, torch.Tensor]:
    """Inputs (1, T) that exercise each mask (the export's parity_inputs), an encoder's pair with a few
    [PAD] slots at the end, whose columns must stay empty. Keyed by input name."""
    ids = torch.randint(5, vocab_size, (1, T), generator=gen)
    if "token_type_ids" in names:
        ids[0, T - T // 4:] = PAD_ID
    return dict(zip(names, parity_inputs(names, ids, gen, FAMILIES[family].example_feeds())))


def model_logits(model, ids, *extra):
    """The model's own forward, its character logits (an encoder's first output)."""
    out = model(ids, *extra)
    return out[0] if isinstance(out, tuple) else out


class Inspect(nn.Module):
    """The model's forward with each layer's attention weights kept (batch 1 at inference)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, *extra):
        t = self.model.transformer
        B, T = input_ids.shape
        # the model's own reading of its inputs: positions, segments, and its mask (causal, every
        # non-[PAD] key, a prefix both ways, or a random order)
        positions, segments, allowed = self.model.reading(input_ids, *extra)
        x = t.tok_emb(input_ids) + t.pos_emb(positions)
        if segments is not None:
            x = x + t.seg_emb(segments)
        weights = []
        for block in t.blocks:
            attn = block.attn
            C, nh = x.size(-1), attn.n_head
            q, k, v = attn.qkv(block.ln1(x)).split(C, dim=2)
            q, k, v = (z.view(B, T, nh, C // nh).transpose(1, 2) for z in (q, k, v))
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // nh))
            w = scores.masked_fill(~allowed, float("-inf")).softmax(dim=-1)  # (B, nh, T, T)
            weights.append(w)
            x = x + attn.proj((w @ v).transpose(1, 2).reshape(B, T, C))
            x = x + block.mlp(block.ln2(x))
        return (self.model.char_logits(t.ln_f(x)), *weights)


def export_inspection(model, family: str, path: Path) -> None:
    cfg = model.cfg
    seq = torch.export.Dim("seq", min=2, max=cfg.context)
    names = inspection_inputs(family, cfg.n_layer)
    ids = torch.full((1, 6), 5, dtype=torch.long)
    args = (ids, *[torch.zeros_like(ids) for _ in names[1:]])
    # forward(input_ids, *extra): torch.export sees (input_ids, extra) with extra a tuple
    shapes = ({1: seq}, tuple({1: seq} for _ in names[1:])) if names[1:] else ({1: seq},)
    program = torch.onnx.export(Inspect(model).eval(), args, dynamo=True, opset_version=OPSET,
                                input_names=names, output_names=["logits", *attn_names(cfg.n_layer)],
                                dynamic_shapes=shapes, external_data=False, verbose=False)
    strip_ir(program.model)  # no stack traces (absolute source paths) in served files
    program.optimize()
    tmp = path.with_name(path.name + ".tmp")
    program.save(str(tmp), external_data=False)
    os.replace(tmp, path)  # written aside, renamed into place


@torch.no_grad()
def reference_weights(model, ids: torch.Tensor, *extra):
    """The attention weights of the model's own forward (training/model.py): each block's attention
    input is captured with a forward hook and its softmax recomputed from the block's own qkv."""
    inputs = []
    hooks = [b.attn.register_forward_hook(lambda m, a, out: inputs.append(a[0])) for b in model.transformer.blocks]
    try:
        logits = model_logits(model, ids, *extra)
    finally:
        for h in hooks:
            h.remove()
    T = ids.shape[1]
    allowed = model.reading(ids, *extra)[2]
    out = []
    for block, x in zip(model.transformer.blocks, inputs):
        B, _, C = x.shape
        nh = block.attn.n_head
        q, k, _ = block.attn.qkv(x).split(C, dim=2)
        q, k = (z.view(B, T, nh, C // nh).transpose(1, 2) for z in (q, k))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(C // nh)
        out.append(scores.masked_fill(~allowed, float("-inf")).softmax(-1))
    return logits, out


@torch.no_grad()
def check_inspection(model, family: str, path: Path, vocab_size: int, seed: int = 0) -> dict:
    """Max |ONNX - PyTorch| of the inspection graph's logits and weights, and of its rows' sums
    over allowed keys from 1, at several lengths (example_inputs: each mask exercised)."""
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    gen = torch.Generator().manual_seed(seed)
    names = inspection_inputs(family, model.cfg.n_layer)
    report = {"logits": 0.0, "weights": 0.0, "row_sums": 0.0}
    for T in parity_lengths(model.cfg.context):
        inputs = example_inputs(names, max(T, 2), vocab_size, gen, family)
        ref_logits, ref_w = reference_weights(model, *inputs.values())
        logits, *weights = sess.run(None, {k: v.numpy() for k, v in inputs.items()})
        report["logits"] = max(report["logits"], float(np.abs(logits - ref_logits.numpy()).max()))
        for w, r in zip(weights, ref_w):
            report["weights"] = max(report["weights"], float(np.abs(w - r.numpy()).max()))
            report["row_sums"] = max(report["row_sums"], float(np.abs(w.sum(-1) - 1).max()))
    report["max_abs_diff"] = max(report.values())
    report["ok"] = report["max_abs_diff"] <= PARITY_TOLERANCE
    return report


# ---- rebuilding a PyTorch model from an exported graph (the shipped set has no checkpoints) ----

def _scope(node) -> list[str]:
    """The module path the exporter recorded on a node (a Python list literal)."""
    import ast

    for p in node.metadata_props:
        if p.key == "pkg.torch.onnx.name_scopes":
            return list(ast.literal_eval(p.value))
    return []


def onnx_state_dict(path: Path, family: str) -> dict[str, torch.Tensor]:
    """Every parameter of the model as the exporter stored it: named initializers keep their
    module path (`gpt.transformer.blocks.0.ln1.weight`); the Linear weights were pre-transposed
    into anonymous initializers, found through the MatMul node whose recorded scope is the module.

    The exporter's optimizer also merges initializers with identical values into one (a freshly
    initialised model's LayerNorms are all ones and zeros, its biases all zeros: step 0 of a run),
    and drops a Gemm's bias when it is all zeros. So each parameter is also looked for through the
    nodes that use it (`_used_parameters`): the LayerNorm / Linear / Embedding whose recorded scope
    is the module, whatever the initializer they read is called."""
    import onnx
    from onnx import numpy_helper

    m = onnx.load(str(path))
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    prefix = family + "."
    state = {name[len(prefix):]: torch.from_numpy(a.copy()) for name, a in inits.items() if name.startswith(prefix)}
    for node in m.graph.node:
        if node.op_type != "MatMul" or node.input[1] not in inits or node.input[1].startswith(prefix):
            continue
        scope = _scope(node)
        module = scope[-2] if len(scope) >= 2 else ""
        if module.startswith(prefix):
            state[module[len(prefix):] + ".weight"] = torch.from_numpy(inits[node.input[1]].T.copy())
    for key, value in _used_parameters(m.graph.node, inits, prefix):
        state.setdefault(key, torch.from_numpy(value.copy()))
    if "lm_head.weight" in state:  # tied (GPT): the exporter kept one copy, under lm_head
        state.setdefault("transformer.tok_emb.weight", state["lm_head.weight"])
    return state


# (op, input index) -> which parameter of the node's module that input is
_ROLES = {("LayerNormalization", 1): "weight", ("LayerNormalization", 2): "bias", ("Gather", 0): "weight",
          ("Gemm", 1): "weight", ("Gemm", 2): "bias", ("Add", 0): "bias", ("Add", 1): "bias"}


def _used_parameters(nodes, inits: dict, prefix: str):
    """(parameter name, value) read through the nodes: a LayerNorm's scale and shift, an
    Embedding's table, a Linear's bias (an Add in the Linear's scope, or a Gemm's C; a Gemm without C
    has a zero bias). Only modules of the model (scope under `prefix`) count."""
    import numpy as np

    for node in nodes:
        scope = _scope(node)
        module = scope[-2] if len(scope) >= 2 else ""
        if not module.startswith(prefix):
            continue
        module = module[len(prefix):]
        is_linear = scope[-1].startswith("linear")
        for k, name in enumerate(node.input):
            role = _ROLES.get((node.op_type, k))
            if name not in inits or role is None or (node.op_type == "Add" and not is_linear):
                continue
            yield f"{module}.{role}", inits[name]
        if node.op_type == "Gemm" and len(node.input) == 2 and node.input[1] in inits:  # bias folded away: zeros
            trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
            w = inits[node.input[1]]
            yield f"{module}.bias", np.zeros(w.shape[0] if trans_b else w.shape[1], dtype=w.dtype)


@torch.no_grad()
def model_from_onnx(folder: Path, family: str):
    """The PyTorch model whose weights are those in folder/<family>.onnx, checked to reproduce that
    graph's logits (so the inspection graph is of the served model, not of a lookalike)."""
    import onnxruntime as ort

    card = json.loads((folder / f"{family}.card.json").read_text(encoding="utf-8"))
    cfg = TransformerConfig(**card["config"])
    model = build_model(family, cfg).eval()
    model.load_state_dict(onnx_state_dict(folder / f"{family}.onnx", family), strict=True)
    spec = SPECS[family]
    outputs = spec.io(cfg.n_layer)[1]
    sess = ort.InferenceSession(str(folder / f"{family}.onnx"), providers=["CPUExecutionProvider"])
    gen = torch.Generator().manual_seed(1)
    diff = 0.0
    for T in parity_lengths(cfg.context):
        example = example_inputs(inspection_inputs(family, cfg.n_layer), T, cfg.vocab_size, gen, family)
        feeds = {k: v.numpy() for k, v in example.items()} | (empty_cache(cfg, 1) if spec.cached else {})
        out = sess.run(outputs[:1], feeds)[0]  # its character logits come first
        ref = model_logits(model, *example.values()).numpy()
        diff = max(diff, float(np.abs(out - ref).max()))
    if diff > PARITY_TOLERANCE:
        raise RuntimeError(f"{family}: the model rebuilt from {family}.onnx differs from it by {diff:.2e}")
    return model, diff


def inspect_set(folder: Path, checkpoints: dict[str, str] | None = None, models: dict | None = None) -> dict:
    """Write <family>.attn.onnx for each family in the set; returns the parity reports. The
    weights come from `models` (already loaded), else a checkpoint, else the set's own ONNX file."""
    folder = Path(folder)
    report = {}
    # package hands over the models it packages: a family left out keeps its graph as it is
    families = [f for f in inspected_families() if models is None or f in models]
    for family in families:
        ckpt = (checkpoints or {}).get(family)
        if (models or {}).get(family) is not None:
            model, source, rebuilt = models[family].eval(), "checkpoint (as packaged)", None
        elif ckpt:
            from .train import load_checkpoint

            _, model, _, _ = load_checkpoint(ckpt)
            model.eval()
            source, rebuilt = f"checkpoint {Path(ckpt).name}", None
        elif (folder / f"{family}.onnx").exists():
            model, rebuilt = model_from_onnx(folder, family)
            source = f"weights read from {family}.onnx"
        else:
            continue
        path = folder / f"{family}.attn.onnx"
        export_inspection(model, family, path)
        check = check_inspection(model, family, path, model.cfg.vocab_size)
        if not check["ok"]:
            raise RuntimeError(f"inspection graph parity failed: {json.dumps(check)}")
        report[family] = {"file": path.name, "bytes": path.stat().st_size, "source": source,
                          "rebuilt_vs_served_logits": rebuilt, "parity": check}
    return report


def write_inspection(folder: Path, checkpoints: dict[str, str] | None = None, models: dict | None = None) -> dict:
    """inspect_set, plus its report in folder/inspection.json (what each graph was exported from
    and how far it is from PyTorch; entries of graphs not written now are kept), written aside and
    renamed into place."""
    report = inspect_set(folder, checkpoints, models)
    path = Path(folder) / "inspection.json"
    try:  # a family packaged alone (T5 into the shipped set) keeps the others' entries
        kept = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        kept = {}
    written = {k: v for k, v in kept.items() if isinstance(v, dict) and (Path(folder) / f"{k}.attn.onnx").exists()}
    written.update(report)
    tmp = Path(folder) / "inspection.json.tmp"
    tmp.write_text(json.dumps(written, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, Path(folder) / "inspection.json")
    return report


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m training.inspect_export", description=__doc__.split("\n\n")[0])
    p.add_argument("folder", help="model set folder (e.g. models/)")
    for family in inspected_families():
        p.add_argument("--" + family, help=f"{SPECS[family].label} checkpoint (default: rebuild from {family}.onnx)")
    a = p.parse_args(argv)
    print(json.dumps(write_inspection(Path(a.folder), {f: getattr(a, f) for f in inspected_families()}), indent=1))


if __name__ == "__main__":
    main()
