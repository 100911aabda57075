"""The fine-tune lab's summary line: every arm's score per size with its 95 % interval, the paired
differences of the full fine-tune against each other arm, and a headline that says no more than the
intervals do (training/finetune_stats.py).

    {"event": "summary", "task", "metric": "accuracy" | "f1",
     "results": {arm: {size: {"mean", "lo", "hi", "n"}}},
     "difference": {"of": ["full", "scratch"], "by_size": {size: {"mean", "lo", "hi", "n", "seeds"}}},
     "differences": {arm: {size: {...}}}          full minus that arm, paired by seed and held-out example
     "headline": {"text", "comparisons": [{"of", "size", "difference"}]}
     "same_answer": {arm: {size: seeds that gave one answer to every held-out example}},
     "steps": {arm: {size: mean steps used}}, "cpu_seconds": {arm: total}, "majority": {...},
     "skipped": [{"size" | "arm", "why"}], "gpt_way": {...}}
"""
from __future__ import annotations

from .finetune_stats import clear, interval, paired_difference

ARM_WORDS = {"full": "the pretrained model (fully fine-tuned)", "scratch": "the same model from scratch",
             "probe": "the linear probe", "ngram": "character n-grams (no pretraining)",
             "likelihood": "GPT's likelihood with one threshold"}
AGAINST = ("scratch", "ngram")  # what the headline compares the full fine-tune with, in this order


def size_words(size: str) -> str:
    return "all the labelled examples" if size == "all" else f"{size} labelled examples"


def comparison(other: str, by_size: dict, sizes: list[str], metric: str) -> dict:
    """The smallest size whose paired interval (full minus other) excludes 0, and its sentence."""
    unit = "points of accuracy" if metric == "accuracy" else "points of F1"
    for size in sizes:
        d = by_size.get(size)
        if d and clear(d):
            side = "above" if d["mean"] > 0 else "below"
            text = (f"With {size_words(size)}, {ARM_WORDS['full']} scores {abs(100 * d['mean']):.1f} {unit} {side} "
                    f"{ARM_WORDS[other]} (95 % interval of the difference {100 * d['lo']:+.1f} to {100 * d['hi']:+.1f}): "
                    "the smallest size where the difference is clear.")
            return {"of": ["full", other], "size": size, "difference": d, "text": text}
    return {"of": ["full", other], "size": None, "difference": None,
            "text": f"Between the pretrained model and {ARM_WORDS[other]}: no size shows a difference yet: "
                    "add seeds or examples."}


def summarize(outcomes: list[tuple[dict, object]], arms: list[str], sizes: list, metric: str) -> dict:
    """outcomes: (result event, per-test-example counts) of every fine-tune."""
    keys = [str(s) for s in sizes]
    by: dict = {}
    for r, u in outcomes:
        by.setdefault(r["arm"], {}).setdefault(str(r["size"]), {})[r["seed"]] = (r, u)
    ran = [a for a in arms if a in by]
    results = {a: {k: interval([u for _, u in by[a].get(k, {}).values()], metric) for k in keys} for a in ran}
    out = {"metric": metric, "results": results,
           "same_answer": {a: {k: sum(r["same_answer"] for r, _ in by[a].get(k, {}).values()) for k in keys} for a in ran},
           "steps": {a: {k: _mean([r.get("steps") for r, _ in by[a].get(k, {}).values()]) for k in keys} for a in ran}}
    if "full" in by:
        diffs = {}
        for other in ran:
            if other == "full":
                continue
            diffs[other] = {k: paired_difference({s: u for s, (_, u) in by["full"].get(k, {}).items()},
                                                 {s: u for s, (_, u) in by[other].get(k, {}).items()}, metric)
                            for k in keys}
        out["differences"] = diffs
        if "scratch" in diffs:
            out["difference"] = {"of": ["full", "scratch"], "by_size": diffs["scratch"]}
        comps = [comparison(o, diffs[o], keys, metric) for o in AGAINST if o in diffs]
        out["headline"] = {"text": " ".join(c["text"] for c in comps), "comparisons": comps} if comps else None
    return out


def _mean(values: list) -> float | None:
    vals = [v for v in values if isinstance(v, (int, float))]
    return round(sum(vals) / len(vals), 1) if vals else None


def by_step(outcomes: list[tuple[dict, object]], metric: str) -> list[dict]:
    """The snapshot curve: the full arm's interval per snapshot, in pretraining order."""
    groups: dict = {}
    for r, u in outcomes:
        groups.setdefault((r["step"], r["model"]), []).append(u)
    return [{"model": m, "step": s, **interval(us, metric)} for (s, m), us in sorted(groups.items())]
