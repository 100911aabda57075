"""Command line: python -m training {train,evaluate,export,package,quiz,live,finetune} --help

Imports are lazy: `finetune --list-tasks` and `--check-task` must run without torch."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields
from pathlib import Path



def add_train_args(p: argparse.ArgumentParser) -> None:
    # Defaults are None so that a preset (--preset, or --minutes without --steps) can tell the
    # flags the user gave, which win over it, from those left out (TrainConfig's defaults then).
    from .data import DEFAULT_CORPUS
    from .families import FAMILIES
    from .masking import SCHEMES
    from .presets import preset_names

    p.add_argument("family", choices=list(FAMILIES))
    p.add_argument("--corpus", default=str(DEFAULT_CORPUS), help="text file or folder of .txt files (default: shipped Shakespeare)")
    p.add_argument("--out", default=None, help="run folder (default runs/<family>)")
    for name in ("n_layer", "n_head", "n_embd", "n_ff", "context", "batch_size", "steps", "warmup", "eval_interval", "eval_batches", "seed", "threads"):
        p.add_argument("--" + name.replace("_", "-"), type=int, default=None)
    for name in ("minutes", "lr", "min_lr_ratio", "weight_decay", "grad_clip", "mask_rate", "decay_frac", "dropout"):
        p.add_argument("--" + name.replace("_", "-"), type=float, default=None)
    p.add_argument("--optimizer", choices=["adamw", "muon"], default=None, help="muon: Muon for hidden matrices, AdamW for the rest")
    p.add_argument("--schedule", choices=["cosine", "wsd", "linear"], default=None, help="learning-rate shape after warmup")
    p.add_argument("--clock", choices=["wall", "cpu"], default=None,
                   help="what --minutes counts: wall-clock time, or this process's CPU time (a shared machine does not shrink it)")
    p.add_argument("--preset", default=None, help="budget preset (%s): size and schedule for a wall-clock budget; "
                   "--minutes alone picks the nearest; long: the shipped size to its ceiling by steps (minutes "
                   "on a GPU, many hours on a CPU: it says how long here before it starts); flags you give win" % ", ".join(preset_names()))
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="bf16 = mixed precision matmuls (faster on CPUs with AVX512-BF16 or AMX)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (needs a C++ compiler; pays off on long runs)")
    add_device_arg(p)
    p.add_argument("--masking", choices=list(SCHEMES), default=None,
                   help="BERT and ELECTRA: which characters are hidden: each on its own (char), spans, or whole words")
    p.add_argument("--no-nsp", action="store_true", help="BERT: MLM only (as RoBERTa)")
    p.add_argument("--init-from", default=None,
                   help="ELECTRA: start the discriminator's encoder from a BERT checkpoint of the same size")
    p.add_argument("--resume", default=None, help="checkpoint to continue from (its settings win, but --steps/--minutes extend)")
    p.add_argument("--yes", action="store_true", help="--preset long: start even if the measured estimate is over an hour")


def add_device_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default=None,
                   help="where to train: auto (default) = a CUDA GPU when PyTorch sees one, else the CPU; "
                        "on CUDA the matmuls run in bf16")


def cmd_train(args) -> None:
    from .device import DeviceError
    from .presets import LONG_RUNS, with_preset
    from .train import TrainConfig, Trainer

    names = {f.name for f in fields(TrainConfig)}
    values = {k: v for k, v in vars(args).items() if k in names and v is not None}
    values["out"] = args.out or f"runs/{args.family}"
    values["nsp"] = not args.no_nsp
    try:
        if args.resume:  # the checkpoint's device unless --device moves it
            extend = {k: values[k] for k in ("steps", "minutes", "device") if k in values}
            trainer = Trainer.resume(args.resume, **extend)
        else:
            trainer = Trainer(TrainConfig(**with_preset(values, args.preset)))
    except DeviceError as e:
        raise SystemExit(f"python -m training train: {e}") from None
    if args.preset in LONG_RUNS and not args.resume:  # the same steps on any machine: say how long here first
        from .estimate import check_run_length

        check_run_length(trainer, args.yes, ask=input if sys.stdin.isatty() and sys.stderr.isatty() else None)
    trainer.fit()


def cmd_evaluate(args) -> None:
    from .evaluate import evaluate_checkpoint, evaluate_set
    if not Path(args.checkpoint).is_dir():
        if args.family or args.write_card:
            raise SystemExit("python -m training evaluate: --family and --write-card are for a model set folder")
        print(json.dumps(evaluate_checkpoint(args.checkpoint, args.text, args.split or "test"), indent=1))
        return
    # a model set folder: its family's model rebuilt from the set's ONNX file (the shipped set has no checkpoints)
    if not args.family or args.text:
        raise SystemExit("python -m training evaluate: a model set folder needs --family (which of its models), "
                         "and takes --corpus (its held-out splits), not --text")
    from .data import DEFAULT_CORPUS
    try:
        result = evaluate_set(args.checkpoint, args.family, args.corpus or DEFAULT_CORPUS,
                              [args.split] if args.split else ["validation", "test"], args.write_card)
    except (OSError, ValueError) as e:
        raise SystemExit(f"python -m training evaluate: {e}") from None
    print(json.dumps(result, indent=1))


def cmd_export(args) -> None:
    from .export import export_checkpoint
    print(json.dumps(export_checkpoint(args.checkpoint, args.out), indent=1))


def cmd_package(args) -> None:
    from .package import package
    provenance = json.loads(Path(args.provenance).read_text(encoding="utf-8")) if args.provenance else None
    from .families import FAMILIES

    print(json.dumps(package([getattr(args, f) for f in FAMILIES], args.out, provenance=provenance), indent=1))


def cmd_quiz(args) -> None:
    from .quiz import quiz_documents, write_quiz
    try:
        section = write_quiz(args.models, quiz_documents(args.models, args.corpus), args.items, args.seed)
    except ValueError as e:
        raise SystemExit(f"python -m training quiz: {e}") from None
    print(json.dumps(section, indent=1))


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["finetune"]:  # its own parser (training/finetune/command.py), before anything imports torch
        from .finetune import cli as finetune_cli
        sys.exit(finetune_cli(argv[1:]))
    parser = argparse.ArgumentParser(prog="python -m training", description="Pretrain, evaluate and export tiny char-level GPT and BERT.")
    sub = parser.add_subparsers(dest="command", required=True)
    from .families import FAMILIES

    add_train_args(sub.add_parser("train", help="pretrain one family: " + ", ".join(FAMILIES)))
    p = sub.add_parser("evaluate", help="held-out metrics of a checkpoint (or of a model set's model), printed as JSON")
    p.add_argument("checkpoint", help="a checkpoint (ckpt.pt), or a model set folder with --family")
    p.add_argument("--text", default=None, help="held-out text file or folder (default: the corpus's held-out split)")
    p.add_argument("--split", default=None, choices=["validation", "test"],
                   help="default: test for a checkpoint; both (the card's) for a model set")
    p.add_argument("--family", default=None, choices=list(FAMILIES), help="a model set's model to evaluate")
    p.add_argument("--corpus", default=None, help="a model set's corpus (default: the shipped plays)")
    p.add_argument("--write-card", action="store_true",
                   help="write the figures into the set's <family>.card.json (e.g. models/t5.card.json)")
    p = sub.add_parser("export", help="write ONNX and check parity with PyTorch")
    p.add_argument("checkpoint")
    p.add_argument("--out", default="models")
    p = sub.add_parser("package", help="export + evaluate the models and write cards and the NSP quiz to models/ (--gpt '' leaves GPT out)")
    from app.contract import SPECS

    for name, spec in SPECS.items():  # --gpt, --bert, --electra, ...: one checkpoint per family
        p.add_argument("--" + name, default=None if spec.optional else f"runs/{name}/ckpt.pt",
                       help=f"the {spec.label} checkpoint to package ('' leaves it out)"
                       + ("" if spec.optional else f"; default runs/{name}/ckpt.pt"))
    p.add_argument("--out", default="models")
    p.add_argument("--provenance", default=None, help="a JSON file {family: {source, command, ...}}: where each "
                   "checkpoint came from, copied into its card (the shipped set's: docs/shipped-set.json)")
    p = sub.add_parser("quiz", help="rebuild the NSP quiz bank of a model set from bert.onnx and score BERT on it")
    p.add_argument("--models", default="models", help="model set folder (bert.onnx, vocab.json, bert.card.json)")
    p.add_argument("--corpus", default=None, help="the corpus BERT was trained on (default: the shipped one)")
    p.add_argument("--items", type=int, default=200)
    p.add_argument("--seed", type=int, default=7)
    from .recovery import add_args as add_recovery_args

    add_recovery_args(sub.add_parser("recovery", help="masked top-1 of BERTs trained with each masking, under each"))
    from .live import add_live_args
    add_live_args(sub.add_parser("live", help="train gpt and/or bert side by side, reporting JSON lines (the app's /train)"))
    p = sub.add_parser("web-copies", help="add web copies (hashed, gzipped, fp16 when it keeps the answers) to model-set "
                       "folders and every set below them, for the browser's engine and export-static")
    p.add_argument("folders", nargs="+", help="model-set folders (e.g. models: the shipped set and its example run)")
    sub.add_parser("finetune", add_help=False, help="fine-tune a model set's BERT on a labelled task: full vs probe vs scratch (--help)")
    args = parser.parse_args(argv)
    if args.command == "live":
        from .live import cli
        cli(sys.argv[2:] if argv is None else argv[1:])
    if args.command == "web-copies":
        from .export.web import main as web_main

        return web_main(args.folders)
    if args.command == "recovery":
        from .recovery import main as recovery_main

        return recovery_main(args)
    {"train": cmd_train, "evaluate": cmd_evaluate, "export": cmd_export, "package": cmd_package,
     "quiz": cmd_quiz}[args.command](args)


if __name__ == "__main__":
    main()
