"""Export a trained checkpoint to one self-contained ONNX file and check it against PyTorch.

The ONNX files are the contract with app/ (which has no torch):

gpt.onnx   inputs  input_ids     int64 (batch, seq)   new characters
                   past_length   int64 ()             how many characters the cache already holds
                   past_key_<i>  float (batch, n_head, context, head_size), i = 0 .. n_layer-1: layer
                   past_value_<i>   i's keys and values; rows 0 .. past_length-1 are the cached ones
           outputs logits           float (batch, seq, vocab)  next-character logits at each new position
                   present_key_<i>, present_value_<i>  the buffers with the new characters' rows
                                    written at past_length .. past_length + seq - 1
           A full forward is past_length 0 (any buffers); a sampling step is seq 1 at past_length
           P. Bind each present_* to its past_* buffer (onnxruntime IOBinding) and the cache is
           updated in place. The caller keeps past_length + seq <= context (onnxruntime does not
           check). The attention is onnxruntime's GroupQueryAttention (com.microsoft domain), so
           this graph runs in onnxruntime, not in every ONNX runtime.

bert.onnx  inputs  input_ids, token_type_ids  int64 (batch, seq)
           outputs mlm_logits (batch, seq, vocab), nsp_logits (batch, 2) [IsNext, NotNext]

electra.onnx  inputs input_ids, token_type_ids; output replaced_logits (batch, seq)

The names come from app.contract (onnx_io); which wrapper a family traces from its table entry.
A bidirectional family (BERT, ELECTRA) is one plain graph (`plain_program`); GPT's carries its cache.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

from app.contract import cache_names, onnx_io  # noqa: F401  (onnx_io: the names every graph carries)

from ..families import family
from ..onnx_meta import strip_ir

OPSET = 20
PARITY_TOLERANCE = 1e-4


class GPTExport(nn.Module):
    def __init__(self, gpt):
        super().__init__()
        self.gpt = gpt

    def forward(self, input_ids, past_length, *past):
        # Flat (key_0, value_0, key_1, ...) in and out: one named graph input/output per tensor.
        logits, present = self.gpt.forward_with_cache(input_ids, list(zip(past[0::2], past[1::2])), past_length)
        return (logits, *[t for kv in present for t in kv])


class BERTExport(nn.Module):
    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, token_type_ids):
        return self.bert(input_ids, token_type_ids)


def cache_shape(cfg, batch: int) -> tuple[int, ...]:
    """One layer's key (or value) buffer."""
    return (batch, cfg.n_head, cfg.context, cfg.n_embd // cfg.n_head)


def empty_cache(cfg, batch: int) -> dict:
    """Feeds for a run from an empty cache (past_length 0)."""
    return {"past_length": np.array(0, dtype=np.int64),
            **{name: np.zeros(cache_shape(cfg, batch), dtype=np.float32) for name in cache_names(cfg.n_layer)}}


def _program(module, args, input_names, output_names, dynamic_shapes):
    """The traced, not yet optimised ONNX program: its initializers keep the parameters' names, so
    training/live/ can re-export new weights of the same model by swapping them in."""
    program = torch.onnx.export(
        module, args, dynamo=True, opset_version=OPSET, input_names=input_names, optimize=False,
        output_names=output_names, dynamic_shapes=dynamic_shapes, external_data=False, verbose=False)
    strip_ir(program.model)  # served files carry no stack traces (absolute source paths)
    return program


def save_program(program, path: Path) -> None:
    program.optimize()
    program.save(str(path), external_data=False)


def gpt_program(model, name: str = "gpt"):
    cfg = model.cfg
    ids = torch.zeros((2, 5), dtype=torch.long)
    names = cache_names(cfg.n_layer)
    past = [torch.zeros(cache_shape(cfg, 2)) for _ in names]
    batch, seq = torch.export.Dim("batch", min=1, max=1024), torch.export.Dim("seq", min=1, max=cfg.context)
    shapes = {"input_ids": {0: batch, 1: seq}, "past_length": None, "past": tuple({0: batch} for _ in names)}
    return _program(GPTExport(model).eval(), (ids, torch.tensor(3), *past),
                    ["input_ids", "past_length", *names], ["logits", *cache_names(cfg.n_layer, "present")], shapes)


def plain_program(model, name: str):
    """A graph without a cache: every input (batch, seq) int64, outputs as the contract names them."""
    fam = family(name)
    inputs, outputs = fam.io(model.cfg.n_layer)
    ids = torch.full((2, 6), 5, dtype=torch.long)
    batch, seq = torch.export.Dim("batch", min=1, max=1024), torch.export.Dim("seq", min=1, max=model.cfg.context)
    args = (ids, *[torch.zeros_like(ids) for _ in inputs[1:]])
    return _program(fam.export_wrapper()(model).eval(), args, inputs, outputs,
                    {n: {0: batch, 1: seq} for n in inputs})


def program(name: str, model):
    """The traced, not yet optimised program of one family's model."""
    return family(name).program()(model, name)


def export_onnx(name: str, model, path: Path) -> None:
    save_program(program(name, model), path)


def parity_lengths(context: int) -> list[int]:
    return sorted({1, 7, min(64, context), context})


def parity_inputs(inputs: list[str], ids: torch.Tensor, gen: torch.Generator | None = None,
                  own: dict | None = None) -> list[torch.Tensor]:
    """The example feed of a plain graph, each input as the model meets it in use: ids; an encoder's
    second segment in the second half (the contract's shared encoder input); any other input from
    `own`, the family's entry's `feeds` (T5's prefix, PLM's order), so a new family's graph inputs
    need no line here. Shared by the export's and the inspection graph's checks
    (training/inspect_export.py)."""
    B, T = ids.shape
    feeds = {"token_type_ids": lambda ids, gen: (torch.arange(T) >= T // 2).long().expand(B, T), **(own or {})}
    unknown = [n for n in inputs[1:] if n not in feeds]
    if unknown:
        raise ValueError(f"no example feed for the graph input(s) {unknown}: name one in the family's entry (`feeds`)")
    return [ids] + [feeds[n](ids, gen) for n in inputs[1:]]


@torch.no_grad()
def check_parity(name: str, model, path: Path, vocab_size: int, seed: int = 0, threads: int = 0) -> dict:
    """Max |ONNX - PyTorch| over several sequence lengths, every output (and, for a decoding graph
    with a cache, decoding one character at a time). threads: onnxruntime's intra-op threads."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    gen = torch.Generator().manual_seed(seed)
    cfg = model.cfg
    inputs, _ = family(name).io(cfg.n_layer)
    cached = "past_length" in inputs
    wrapper = family(name).export_wrapper()(model).eval()
    report = {}
    for T in parity_lengths(cfg.context):
        ids = torch.randint(5, vocab_size, (2, T), generator=gen)
        if cached:
            ref = [model(ids)]
            out = sess.run(["logits"], {"input_ids": ids.numpy(), **empty_cache(cfg, 2)})
        else:
            feed = parity_inputs(inputs, ids, gen, family(name).example_feeds())
            ref = wrapper(*feed)
            ref = list(ref) if isinstance(ref, tuple) else [ref]
            out = sess.run(None, {n: t.numpy() for n, t in zip(inputs, feed)})
        report[f"len_{T}"] = float(max(np.abs(o - r.numpy()).max() for o, r in zip(out, ref)))
    if cached:
        # Cached decoding: a prefix, then one character at a time, must equal the full forward.
        T = min(cfg.context, 40)
        ids = torch.randint(5, vocab_size, (1, T), generator=gen)
        ref = model(ids).numpy()
        names = cache_names(cfg.n_layer)
        logits, *cache = sess.run(None, {"input_ids": ids[:, :T // 2].numpy(), **empty_cache(cfg, 1)})
        outs = [logits]
        for t in range(T // 2, T):
            logits, *cache = sess.run(None, {"input_ids": ids[:, t:t + 1].numpy(),
                                             "past_length": np.array(t, dtype=np.int64), **dict(zip(names, cache))})
            outs.append(logits)
        report["cached_decoding"] = float(np.abs(np.concatenate(outs, axis=1) - ref).max())
    report["max_abs_diff"] = max(report.values())
    report["ok"] = report["max_abs_diff"] <= PARITY_TOLERANCE
    return report


def export_checkpoint(checkpoint: str | Path, out_dir: str | Path, name: str | None = None) -> dict:
    from ..train import load_checkpoint

    family, model, tok, _state = load_checkpoint(checkpoint)
    return export_model(family, model, tok, out_dir, name)


def export_model(family: str, model, tok, out_dir: str | Path, name: str | None = None) -> dict:
    """export_checkpoint for a model already in memory (package loads each checkpoint once)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name or family}.onnx"
    export_onnx(family, model, path)
    report = check_parity(family, model, path, tok.vocab_size)
    if not report["ok"]:
        raise RuntimeError(f"ONNX parity check failed: {json.dumps(report)}")
    tok.save(out_dir / "vocab.json")
    return {"family": family, "path": str(path), "bytes": path.stat().st_size, "parity": report}
