"""The documents' tables of figures (docs/*.md), printed from the models by the app's own code.

    python -m benchmarks.tables              # every table, each between its markers
    python -m benchmarks.tables recovery     # one table: recovery | models | inspection | masking | finetune | http
    python -m benchmarks.tables --write      # rewrite the blocks in docs/*.md in place

Each table sits in one document (`HOMES`: docs/models.md, docs/training.md, docs/finetune.md, docs/serving.md)
between `<!-- table:NAME -->` and `<!-- /table -->`; the text between the markers is exactly what
`render(NAME)` prints (tests/app/test_doc_tables.py compares them).
After retraining or repackaging `models/`, run `python -m benchmarks.tables --write`.

- recovery: BERT's top-1 recovery per corruption, computed by the same function and on the same
  held-out text as `POST /api/objectives/recovery` (app.routers.objectives.recovery_figures);
- models: architecture, training and held-out metrics, read from `models/*.card.json`;
- inspection: how closely the attention inspection graphs agree, from `models/inspection.json`;
- masking: masked top-1 of BERTs trained per character, in spans and in whole words, each under
  each corruption, from the stored measurement `benchmarks/masking_recovery.json` (training/recovery.py);
- finetune: the fine-tune lab's measured figures, from `models/finetune.card.json` (training/finetune/report.py);
- oldnew: the shipped set against the one it replaced, from the cards and the stored
  `benchmarks/previous_set.json` (the old cards' figures, read by the same function);
- presetcheck: `--preset long` run again against the shipped checkpoints, from the stored evaluations
  `benchmarks/preset_long_check.json`;
- http: the server's cost per request beyond the model, next to bare FastAPI's, from the stored
  measurement `benchmarks/http_overhead.json` (`python -m benchmarks.http_overhead --json ...`).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from benchmarks.card_rows import _size, _training, electra_rows, pct, plm_rows, t5_rows, thousands

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
MODELS = ROOT / "models"
# The document (under docs/) that holds each table's block.
HOMES = {"recovery": "models.md", "models": "models.md", "inspection": "models.md", "masking": "models.md",
         "finetune": "finetune.md", "http": "serving.md", "oldnew": "models.md", "presetcheck": "training.md",
         "spans": "models.md"}
# The figures of the set the shipped one replaced, read from its cards by set_figures() when it was
# replaced (`python -m benchmarks.tables --save-previous OLD_SET_FOLDER`), with where they came from.
PREVIOUS = ROOT / "benchmarks" / "previous_set.json"
# `--preset long` run again to check it reaches the shipped checkpoints (issue 39), with their sources.
PRESET_CHECK = ROOT / "benchmarks" / "preset_long_check.json"

# The recovery table's settings (the API's defaults, with more draws).
RECOVERY = {"mask_rate": 0.15, "mean_span": 3.0, "draws": 200, "seed": 0}
SCHEME_ROWS = (("char", "per character (as trained)"), ("span", "spans (mean 3)"), ("word", "whole words"))


def read_card(models: Path, name: str) -> dict:
    return json.loads((models / f"{name}.card.json").read_text(encoding="utf-8"))


# ---- recovery ----

def recovery_rows(models: Path = MODELS) -> list[tuple[str, dict]]:
    """(label, the API's answer) per corruption, for the shipped set in `models`."""
    from app.registry import Registry
    from app.routers.objectives import recovery_figures
    from app.runtime import Runtime

    registry = Registry(Runtime(threads=1, parallel_runs=1))
    registry.add(models, kind="shipped", pin=True, default=True)
    return [(label, recovery_figures(registry, None, scheme, **RECOVERY)) for scheme, label in SCHEME_ROWS]


def render_recovery(models: Path = MODELS) -> str:
    r = RECOVERY
    lines = [f"BERT's top-1 recovery of the original character ({r['draws']} draws at {round(100 * r['mask_rate'])} %, "
             f"seed {r['seed']}; the same as `POST /api/objectives/recovery` with these settings):",
             "",
             "| corruption | overall | [MASK] | random character | unchanged | positions scored |",
             "|---|---|---|---|---|---|"]
    for label, out in recovery_rows(models):
        by = out["by_action"]
        lines.append(f"| {label} | {pct(out['accuracy'])} | {pct(by['mask']['accuracy'])} | "
                     f"{pct(by['random']['accuracy'])} | {pct(by['unchanged']['accuracy'])} | "
                     f"{thousands(out['positions'])} |")
    return "\n".join(lines)


# ---- the shipped models, from their cards ----

def render_models(models: Path = MODELS) -> str:
    gpt, bert = read_card(models, "gpt"), read_card(models, "bert")
    gv, gt = gpt["evaluation"]["validation"], gpt["evaluation"]["test"]
    bv, bt = bert["evaluation"]["validation"], bert["evaluation"]["test"]
    size = (f"Both models: {_size(gpt)}" if _size(gpt) == _size(bert)
            else f"GPT: {_size(gpt)}; BERT: {_size(bert)}")
    lines = [f"{size} (GPT {gpt['parameters'] / 1e6:.2f}M parameters, context {gpt['config']['context']}; "
             f"BERT {bert['parameters'] / 1e6:.2f}M, context {bert['config']['context']}). "
             f"GPT: {_training(gpt)}; BERT: {_training(bert)}.",
             "",
             "| model | held-out metric | validation plays | test plays |",
             "|---|---|---|---|",
             f"| GPT | nats per character (perplexity) | {gv['nats_per_char']:.3f} ({gv['perplexity']:.2f}) | "
             f"{gt['nats_per_char']:.3f} ({gt['perplexity']:.2f}) |"]

    def top(ev):
        return f"{pct(ev['masked_top1'])} / {pct(ev['masked_top5'])}"

    recipe = bv.get("recipe", {})
    lines += [f"| BERT | masked top-1 / top-5 ({round(100 * recipe.get('mask_rate', 0.15))} %, 80/10/10) | "
              f"{top(bv)} | {top(bt)} |",
              f"| BERT | same architecture, random init | {top(bv['random_init'])} | {top(bt['random_init'])} |",
              f"| BERT | unigram baseline | {top(bv['unigram_baseline'])} | {top(bt['unigram_baseline'])} |"]
    if "nsp_accuracy" in bv:
        cal = bert.get("nsp_calibration")
        how = (f"; IsNext threshold set on {thousands(cal['pairs'])} other validation pairs" if cal else "")
        lines.append(f"| BERT | NSP accuracy ({thousands(bv['nsp_pairs'])} balanced pairs per split{how}) | "
                     f"{pct(bv['nsp_accuracy'])} | {pct(bt['nsp_accuracy'])} |")
    quiz = bert.get("quiz")
    if quiz:
        lines.append(f"| BERT | NSP quiz bank: {quiz['items']} items drawn from validation and test plays together; "
                     f"BERT says IsNext {quiz['is_next_said']} times, where {quiz['is_next_items']} items are IsNext | "
                     f"{pct(quiz['accuracy'])} ({quiz['correct']} / {quiz['items']}) | (one bank) |")
    if (models / "electra.card.json").is_file():
        lines += electra_rows(read_card(models, "electra"))
    for name, rows in (("t5", t5_rows), ("plm", plm_rows)):
        if (models / f"{name}.card.json").is_file():
            lines += rows(read_card(models, name))
    return "\n".join(lines)


# ---- T5 against BERT on the same hidden spans (benchmarks/t5_spans.py) ----
SPANS_RESULTS = ROOT / "benchmarks" / "t5_spans.json"


def render_spans(models: Path = MODELS) -> str:
    """The stored measurement (`python -m benchmarks.t5_spans --save benchmarks/t5_spans.json`), printed
    by the same function as the command."""
    from benchmarks.t5_spans import render

    return render(json.loads(SPANS_RESULTS.read_text(encoding="utf-8")))


def set_figures(models: Path) -> dict:
    """The headline figures of a set's cards (validation plays, test plays), for the old-vs-new table."""
    gpt, bert = read_card(models, "gpt"), read_card(models, "bert")
    figures = {"gpt_nats": [gpt["evaluation"][s]["nats_per_char"] for s in ("validation", "test")],
               "bert_top1": [bert["evaluation"][s]["masked_top1"] for s in ("validation", "test")],
               "bert_nsp": [bert["evaluation"][s]["nsp_accuracy"] for s in ("validation", "test")],
               "quiz": {k: bert["quiz"][k] for k in ("accuracy", "is_next_said", "items")}}
    for name, card in (("gpt", gpt), ("bert", bert)):
        t = card["training"]
        figures[f"{name}_training"] = {k: t.get(k) for k in ("steps", "batch_size", "tokens", "seconds", "clock", "device",
                                                             "machine")}
    if (models / "electra.card.json").is_file():
        v = read_card(models, "electra")["evaluation"]["validation"]
        figures["electra"] = {k: v[k] for k in ("auc", "replaced_recall", "original_flagged")}
    return figures


def _run(t: dict) -> str:
    where = "CPU-minutes" if t.get("clock") == "cpu" else ("GPU-minutes" if t.get("device") == "cuda" else "minutes")
    return (f"{thousands(t['steps'])} steps of {t['batch_size']} ({t['tokens'] / 1e6:.1f} M tokens), "
            f"{t['seconds'] / 60:.1f} {where}")


def render_oldnew(models: Path = MODELS, previous: Path = PREVIOUS) -> str:
    stored = json.loads(previous.read_text(encoding="utf-8"))
    old, new = stored["figures"], set_figures(models)

    def two(f, key, fmt):
        return " / ".join(fmt(x) for x in f[key])

    def quiz(f):
        q = f["quiz"]
        return f"{pct(q['accuracy'])}, says IsNext {q['is_next_said']} of {q['items']}"

    def electra(f):
        e = f.get("electra")
        return "–" if not e else f"{e['auc']:.3f} / {pct(e['replaced_recall'])} / {pct(e['original_flagged'])}"

    nats = lambda x: f"{x:.3f}"  # noqa: E731
    rows = [("GPT", "nats per character", two(old, "gpt_nats", nats), two(new, "gpt_nats", nats), "<= 1.32"),
            ("BERT", "masked top-1", two(old, "bert_top1", pct), two(new, "bert_top1", pct), ">= 78 %"),
            ("BERT", "NSP accuracy (threshold calibrated)", two(old, "bert_nsp", pct), two(new, "bert_nsp", pct),
             ">= 80 %"),
            ("BERT", "NSP quiz bank", quiz(old), quiz(new), "IsNext 40-60 %"),
            ("ELECTRA", "AUC / replaced caught / originals flagged (validation)", electra(old), electra(new),
             ">= 0.90 / >= 50 % / <= 5 %"),
            ("GPT", "training", _run(old["gpt_training"]), _run(new["gpt_training"]), ""),
            ("BERT", "training", _run(old["bert_training"]), _run(new["bert_training"]), "")]
    lines = [f"The shipped set against the one it replaced ({stored['source']}); validation plays / test plays:",
             "", "| model | figure | previous set | this set | goal |", "|---|---|---|---|---|"]
    lines += [f"| {' | '.join(r)} |" for r in rows]
    return "\n".join(lines)


def render_presetcheck(models: Path = MODELS, stored: Path = PRESET_CHECK) -> str:
    check = json.loads(stored.read_text(encoding="utf-8"))

    def row(label: str, runs: dict) -> str:
        g, b = runs["gpt"], runs["bert"]
        cells = [" / ".join(f"{g[s]['nats_per_char']:.3f}" for s in ("validation", "test")),
                 " / ".join(f"{b[s]['masked_top1']:.3f}" for s in ("validation", "test")),
                 " / ".join(f"{b[s]['nsp_accuracy']:.4g}" for s in ("validation", "test"))]
        return f"| {label} | " + " | ".join(cells) + " |"

    return "\n".join([
        "Validation plays / test plays, this project's evaluator (`python -m training evaluate`, NSP before "
        "the calibration `package` adds):", "",
        "| run | GPT nats/char | BERT masked top-1 | BERT NSP |", "|---|---|---|---|",
        row("shipped checkpoints", check["shipped_checkpoints"]["runs"]),
        row("`--preset long` now, run again (session 7, one H200)", check["runs"]),
        row("`--preset long` before (cosine to 0.1, BERT dropout 0.1; issue 39's figures)", check["before"]["runs"])])


def render_inspection(models: Path = MODELS) -> str:
    info = json.loads((models / "inspection.json").read_text(encoding="utf-8"))
    g, b = info["gpt"], info["bert"]

    def source(name: str, entry: dict) -> str:
        if entry.get("rebuilt_vs_served_logits") is None:  # exported from the checkpoint, as packaged
            return f"{name}'s from its checkpoint"
        return f"{name}'s from weights read back out of {entry['file'].replace('.attn', '')} (logits within {entry['rebuilt_vs_served_logits']:.1e})"
    more = [(label, info[k]) for k, label in (("t5", "T5"), ("plm", "PLM")) if k in info]
    extra = "".join(f"; {source(label, e)}, matching PyTorch to {e['parity']['weights']:.1e}" for label, e in more)
    return (f"The inspection graphs were exported {source('GPT', g)} and {source('BERT', b)}; their attention weights "
            f"match PyTorch to {g['parity']['weights']:.1e} / {b['parity']['weights']:.1e}{extra} (`models/inspection.json`).")


# ---- masking: BERTs trained with each masking scheme, each scored under each ----
MASKING_RESULTS = ROOT / "benchmarks" / "masking_recovery.json"


def render_masking(models: Path = MODELS) -> str:
    """The stored measurement (`python -m training recovery ... --save benchmarks/masking_recovery.json`),
    printed by the same function as `python -m training recovery --load`."""
    from training.recovery import render

    return render(json.loads(MASKING_RESULTS.read_text(encoding="utf-8")))


def render_finetune(models: Path = MODELS) -> str:
    """The fine-tune lab's figures, from models/finetune.card.json (python -m training.finetune.report)."""
    from training.finetune.report import markdown

    return markdown(read_card(models, "finetune"))


# ---- http: per-request overhead of the server, measured with wrk (benchmarks/http_overhead.py) ----
HTTP_RESULTS = ROOT / "benchmarks" / "http_overhead.json"


def render_http(models: Path = MODELS) -> str:
    """The stored measurement (`python -m benchmarks.http_overhead --json benchmarks/http_overhead.json`)."""
    from benchmarks.http_overhead import render

    return render(json.loads(HTTP_RESULTS.read_text(encoding="utf-8")))


TABLES = {"recovery": render_recovery, "models": render_models, "inspection": render_inspection,
          "masking": render_masking, "finetune": render_finetune, "http": render_http, "oldnew": render_oldnew,
          "presetcheck": render_presetcheck, "spans": render_spans}


# ---- the documents' blocks ----

def block_pattern(name: str) -> re.Pattern:
    return re.compile(rf"(<!-- table:{re.escape(name)} -->)\n?(.*?)\n?(<!-- /table -->)", re.S)


def home(name: str, docs: Path = DOCS) -> Path:
    """The document that holds table `name`."""
    return docs / HOMES[name]


def readme_block(name: str, text: str | None = None, docs: Path = DOCS) -> str:
    """The text between the markers for `name` in its document (the markers must be there once)."""
    text = home(name, docs).read_text(encoding="utf-8") if text is None else text
    found = block_pattern(name).findall(text)
    if len(found) != 1:
        raise LookupError(f"{HOMES[name]} has {len(found)} '<!-- table:{name} -->' blocks, expected 1")
    return found[0][1]


def replace_block(name: str, body: str, text: str) -> str:
    readme_block(name, text)
    return block_pattern(name).sub(lambda m: f"{m.group(1)}\n{body}\n{m.group(3)}", text)


def write_readme(tables: dict[str, str], docs: Path = DOCS) -> None:
    """Put each table in its document (every block is checked before any file is written)."""
    texts: dict[Path, str] = {}
    for name, body in tables.items():
        path = home(name, docs)
        texts[path] = replace_block(name, body, texts.get(path) or path.read_text(encoding="utf-8"))
    for path, text in texts.items():
        tmp = path.with_suffix(".md.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.tables", description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", metavar="TABLE", help=f"which tables ({', '.join(TABLES)}); all when omitted")
    ap.add_argument("--models", type=Path, default=MODELS, help="the model set folder (default: models/)")
    ap.add_argument("--write", action="store_true", help="replace the blocks in their documents")
    ap.add_argument("--docs", type=Path, default=DOCS, help="the folder of the documents (default: docs/)")
    ap.add_argument("--save-previous", type=Path, metavar="OLD_SET", default=None,
                    help="store OLD_SET's figures as the previous set (benchmarks/previous_set.json) before a new set "
                         "replaces it; --source says where the folder came from")
    ap.add_argument("--source", default="", help="with --save-previous: e.g. 'the shipped set at commit 365bb1c'")
    args = ap.parse_args(argv)
    if args.save_previous is not None:
        if not args.source:
            ap.error("--save-previous needs --source (where the old set came from)")
        PREVIOUS.write_text(json.dumps({"source": args.source, "figures": set_figures(args.save_previous)}, indent=1)
                            + "\n", encoding="utf-8")
        print(f"wrote {PREVIOUS.relative_to(ROOT)}")
        return 0
    unknown = [n for n in args.names if n not in TABLES]
    if unknown:
        ap.error(f"unknown table {unknown[0]!r}: choose from {', '.join(TABLES)}")
    out = {name: TABLES[name](args.models) for name in (args.names or TABLES)}
    if args.write:
        try:
            write_readme(out, args.docs)
        except (LookupError, OSError) as e:
            ap.error(f"--write: {e}")
    for name, body in out.items():
        print(f"<!-- table:{name} -->\n{body}\n<!-- /table -->\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
