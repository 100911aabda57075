"""T5 against BERT on the same hidden spans (issues 41, 54): how many hidden characters each gets right.

The held-out windows and spans are T5's own evaluation draw (training/t5.py evaluate_t5: 1,000
windows, seed 2024, 15 % hidden in spans of 3 on average), so the T5 figures are its card's. On the
same windows and spans:
    T5, teacher-forced  each hidden character guessed after the TRUE characters of its span so far,
           as in training (the card's first figure; no page shows this), top-1 per hidden character;
    T5, written freely  what the /spans page shows: each span written after its sentinel from T5's
           own characters so far, greedily, by the page's own rule (app/tasks/t5.py Writing, through
           training/t5_free.py), on the first 200 windows (writing costs one model run per token);
    BERT   the set's BERT with every hidden character replaced by its own [MASK] (so it knows each
           span's length, which T5 must work out), top-1 per hidden character, all at once: what the
           page's "What BERT fills here" shows;
    unigram  always the training text's most common character (told each span's length too).
"Spans exact": a span whose every character is right (and, for T5, nothing written past it).
Both models are rebuilt from the set's ONNX files (training/inspect_export.py model_from_onnx,
checked against those files' logits), so the figures are the served models'.

    python -m benchmarks.t5_spans                     # print the tables (models/)
    python -m benchmarks.t5_spans --save benchmarks/t5_spans.json   # store them for docs/models.md
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from app.contract import CLS, MASK, SEP

MODELS = Path(__file__).resolve().parent.parent / "models"
SPLITS = ("validation", "test")


def uncorrupt(ids: list[int], prefix_len: int, vocab_size: int) -> tuple[list[int], list[list[int]]]:
    """A T5 sequence (corrupted line, [SEP], then ⟨k⟩ span k ... [SEP]) -> (the original line, the
    positions of each span's hidden characters)."""
    from training.t5_free import spans_of

    spans = spans_of(ids, prefix_len, vocab_size)
    line, hidden = [], []
    for t in ids[:prefix_len - 1]:
        if t >= vocab_size:
            span = spans[t - vocab_size] if t - vocab_size < len(spans) else []
            hidden.append(list(range(len(line), len(line) + len(span))))
            line += span
        else:
            line.append(t)
    return line, hidden


@torch.no_grad()
def bert_fill(bert, batches, vocab_size: int, unigram: int | None = None) -> dict:
    """BERT's top-1 on every hidden character of T5's batches, each behind its own [MASK] (or always
    the `unigram` character): characters right, and spans with every character right."""
    right = n = exact = spans = 0
    for batch in batches:
        for ids, mask in zip(batch["idx"].tolist(), batch["prefix_mask"].tolist()):
            line, hidden = uncorrupt(ids, sum(mask), vocab_size)
            flat = [p for span in hidden for p in span]
            if unigram is None:
                x = [CLS, *line, SEP]
                for p in flat:
                    x[p + 1] = MASK
                logits, _ = bert(torch.tensor([x]), torch.zeros(1, len(x), dtype=torch.long))
                guess = dict(zip(flat, logits[0, [p + 1 for p in flat]].argmax(-1).tolist()))
            else:
                guess = dict.fromkeys(flat, unigram)
            right += sum(guess[p] == line[p] for p in flat)
            n += len(flat)
            exact += sum(all(guess[p] == line[p] for p in span) for span in hidden)
            spans += len(hidden)
    return {"span_char_top1": right / max(n, 1), "span_chars": n, "spans_exact": exact / max(spans, 1), "spans": spans}


def measure(models: Path = MODELS) -> dict:
    from training.data import DEFAULT_CORPUS, load_corpus
    from training.evaluate import most_common_id, objective_batches
    from training.inspect_export import model_from_onnx
    from training.t5 import SpanCorruption, _span_scores
    from training.t5_free import first_windows, free_running
    from training.tokenizer import CharTokenizer

    t5, t5_diff = model_from_onnx(models, "t5")
    bert, bert_diff = model_from_onnx(models, "bert")
    tok = CharTokenizer.load(models / "vocab.json")
    card = json.loads((models / "t5.card.json").read_text(encoding="utf-8"))
    corpus = load_corpus(DEFAULT_CORPUS)  # the shipped plays, held out whole (the card's split)
    if {k: [d.name for d in corpus[k]] for k in SPLITS} != {k: card["corpus"]["split"][k] for k in SPLITS}:
        raise SystemExit("the set's T5 was not trained on the shipped corpus's split; this table is for the shipped set")
    out = {"rebuilt_vs_served_logits": {"t5": t5_diff, "bert": bert_diff}, "splits": {}}
    for split in SPLITS:
        batches = objective_batches(SpanCorruption(t5.cfg, tok), tok, corpus[split], 1000, 2024)
        first = first_windows(batches)
        out["splits"][split] = {
            "t5": _span_scores(t5, batches, tok.first_char_id, tok.vocab_size),
            "bert": bert_fill(bert.eval(), batches, tok.vocab_size),
            "unigram": _span_scores(None, batches, tok.first_char_id, tok.vocab_size, unigram=most_common_id(tok)),
            # what the page shows, on the first windows of the same draw
            "written": {"t5": free_running(t5, first, tok.vocab_size, t5.cfg.context),
                        "bert": bert_fill(bert.eval(), first, tok.vocab_size),
                        "unigram": bert_fill(None, first, tok.vocab_size, unigram=most_common_id(tok))},
        }
    return out


def render(result: dict) -> str:
    s = result["splits"]
    pct = lambda x: f"{100 * x:.1f} %"  # noqa: E731
    rows = [("T5, teacher-forced: each hidden character after the true ones of its span so far (as in training)", "t5"),
            ("BERT: each hidden character behind its own [MASK] (it is told each span's length)", "bert"),
            ("always the most common character", "unigram")]
    lines = [f"Hidden characters right (top-1) on the same {s['test']['t5']['span_chars']:,} (test) and "
             f"{s['validation']['t5']['span_chars']:,} (validation) hidden characters: 1,000 held-out windows per "
             "split, 15 % hidden in spans of 3 on average (T5's own evaluation draw).", "",
             "| model | validation plays | test plays |", "|---|---|---|"]
    lines += [f"| {label} | {pct(s['validation'][k]['span_char_top1'])} | {pct(s['test'][k]['span_char_top1'])} |"
              for label, k in rows]
    if "written" in s["test"]:
        w = {split: s[split]["written"] for split in SPLITS}
        free = [("T5, written freely as the /spans page shows it (greedy, after its own characters so far)", "t5"),
                ("BERT told each span's length, as the page's \"What BERT fills here\"", "bert"),
                ("always the most common character, told each span's length", "unigram")]
        lines += ["", f"What the page shows, on the first {w['test']['t5']['windows']:,} of those windows per split "
                  f"({w['validation']['t5']['span_chars']:,} and {w['test']['t5']['span_chars']:,} hidden characters in "
                  f"{w['validation']['t5']['spans']:,} and {w['test']['t5']['spans']:,} spans); a span is exact when "
                  "every character is right (and T5 wrote nothing past it):", "",
                  "| model | characters right: validation | test | spans exact: validation | test |",
                  "|---|---|---|---|---|"]
        lines += [f"| {label} | {pct(w['validation'][k]['span_char_top1'])} | {pct(w['test'][k]['span_char_top1'])} | "
                  f"{pct(w['validation'][k]['spans_exact'])} | {pct(w['test'][k]['spans_exact'])} |" for label, k in free]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.t5_spans", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", type=Path, default=MODELS)
    p.add_argument("--save", type=Path, help="write the measurement here as JSON")
    a = p.parse_args(argv)
    result = measure(a.models)
    if a.save:
        a.save.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
