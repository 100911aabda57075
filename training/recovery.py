"""How well BERTs trained with each masking scheme recover text hidden by each scheme.

    python -m training recovery char=runs/bert-char/ckpt.pt span=runs/bert-span/ckpt.pt \
        word=runs/bert-word/ckpt.pt --save benchmarks/masking_recovery.json
    python -m training recovery --load benchmarks/masking_recovery.json     # print the stored table

Each checkpoint is scored on the same held-out pairs (its corpus's test split), corrupted once per
scheme with fixed draws (15 %, 80/10/10 per unit, training/masking.py): masked top-1, the share of
selected characters whose original is the model's first guess. The `masking` table of docs/models.md
is this command's output for the stored results (benchmarks/tables.py prints it; tests/app/test_doc_tables.py
holds them together). Printing needs no torch.
"""
from __future__ import annotations

import json
from pathlib import Path

from app.contract import MASKING_SCHEMES as SCHEMES


def measure(checkpoints: dict[str, str], n_pairs: int = 1000, split: str = "test", seed: int = 2024) -> dict:
    from .evaluate import _masked_accuracy, bert_eval_batches, held_out_documents
    from .train import load_checkpoint

    rows = {}
    for trained, path in checkpoints.items():
        _, model, tok, state = load_checkpoint(path)
        tc = state["train_config"]
        docs = held_out_documents(None, tc["corpus"], split)
        rows[trained] = {
            "checkpoint": str(path), "masking": tc.get("masking", "char"), "steps": state["step"],
            "cpu_seconds" if tc.get("clock") == "cpu" else "seconds": round(state["elapsed"], 1),
            "recovery": {scheme: _masked_accuracy(model, bert_eval_batches(tok, docs, model.cfg.context, n_pairs,
                                                                            seed=seed, masking=scheme))["masked_top1"]
                         for scheme in SCHEMES}}
    return {"split": split, "pairs": n_pairs, "seed": seed, "rows": rows}


def table(results: dict) -> str:
    """The 3x3 table as text: rows = how the model was trained, columns = how the text is hidden."""
    head = f"{'trained with':<14}" + "".join(f"{'hidden: ' + s:>14}" for s in SCHEMES) + f"{'steps':>8}"
    lines = [head]
    for trained, row in results["rows"].items():
        lines.append(f"{trained:<14}" + "".join(f"{row['recovery'][s]:>14.3f}" for s in SCHEMES) + f"{row['steps']:>8}")
    return "\n".join(lines)


def describe(results: dict) -> str:
    rows = list(results["rows"].values())
    budget = sorted({r.get("cpu_seconds", r.get("seconds")) for r in rows})
    clock = "CPU-seconds" if "cpu_seconds" in rows[0] else "seconds"
    return (f"Masked top-1 (the original character is the first guess) on {results['pairs']:,} held-out pairs of the "
            f"{results['split']} split, 15 % hidden, 80/10/10 per unit, seed {results['seed']}; rows: BERTs of one size "
            f"trained for the same budget ({' / '.join(f'{b:g}' for b in budget)} {clock}) with each masking; "
            f"columns: how the text is hidden:")


def render(results: dict) -> str:
    """What docs/models.md shows: the sentence and the table (`python -m training recovery --load FILE`)."""
    return describe(results) + "\n\n```\n" + table(results) + "\n```"


def main(args) -> None:
    if args.load:
        results = json.loads(Path(args.load).read_text(encoding="utf-8"))
    else:
        pairs = dict(a.split("=", 1) for a in args.checkpoints)
        results = measure(pairs, args.pairs, args.split)
        if args.save:
            from app.contract import write_json

            write_json(Path(args.save), results)
    print(render(results))


def add_args(p) -> None:
    p.add_argument("checkpoints", nargs="*", help="NAME=CKPT: a BERT checkpoint per row (name it by its masking)")
    p.add_argument("--load", default=None, help="print the table of stored results instead of measuring")
    p.add_argument("--save", default=None, help="store the measured results (JSON)")
    p.add_argument("--pairs", type=int, default=1000)
    p.add_argument("--split", default="test", choices=["validation", "test"])
