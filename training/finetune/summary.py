"""The fine-tune lab's summary line: every arm's score per size with its 95 % interval (seed level,
training/finetune/stats.py), the paired differences of the full fine-tune against each other arm,
and a headline that names how many comparisons were made and claims only what survives the
correction for that many (Bonferroni).

    {"event": "summary", "task", "metric": "accuracy" | "f1", "interval": METHOD,
     "results": {arm: {size: {"mean", "lo", "hi", "n", "per_seed"}}}     readout's zero-label rule under "0"
     "readout": {"zero": {...} | None, "text"}                           what the model knows before any label
     "difference": {"of": ["full", "scratch"], "by_size": {...}},
     "differences": {arm: {size: {"mean", "lo", "hi", "n", "seeds", "per_seed", "corrected"}}}  full minus arm
     "headline": {"text", "m", "compared": {"arms", "sizes"}, "comparisons": [{"of", "size", "difference"}]}
     "choices": {arm: {size: [per seed: the settings chosen on the validation slice]}},
     "same_answer", "steps", "cpu_seconds", "majority", "skipped", "gpt_way"}
"""
from __future__ import annotations

from .stats import METHOD, clear, corrected, interval, paired_difference

ARM_WORDS = {"full": "the pretrained model fine-tuned (LP-FT)", "scratch": "the same model from scratch",
             "probe": "the linear probe", "ngram": "character n-grams (no pretraining)",
             "readout": "the pretrained model's own head with one threshold"}
SHORT = {"readout": "the readout", "probe": "the linear probe", "scratch": "the model from scratch",
         "ngram": "character n-grams"}
CHOICE_KEYS = ("C", "C_at_edge", "lr", "best_step", "still_improving", "model", "threshold", "stopped")


def size_words(size: str) -> str:
    return "all the labelled examples" if size == "all" else f"{size} labelled examples"


def claim_text(other: str, size: str, d: dict, metric: str) -> str:
    unit = "points of accuracy" if metric == "accuracy" else "points of F1"
    side = "above" if d["mean"] > 0 else "below"
    c = d["corrected"]
    return (f"With {size_words(size)}, {ARM_WORDS['full']} scores {abs(100 * d['mean']):.1f} {unit} {side} "
            f"{ARM_WORDS[other]} (interval corrected for {c['m']} comparisons: {100 * c['lo']:+.1f} to "
            f"{100 * c['hi']:+.1f}).")


def headline(diffs: dict, keys: list[str], metric: str) -> dict:
    """Every (arm, size) difference is one comparison; m of them; the clear ones after correction."""
    pairs = [(o, k) for o in diffs for k in keys if diffs[o].get(k, {}).get("n")]
    m = len(pairs)
    for o, k in pairs:
        diffs[o][k]["corrected"] = corrected(diffs[o][k], m)
    comps = [{"of": ["full", o], "size": k, "difference": diffs[o][k], "text": claim_text(o, k, diffs[o][k], metric)}
             for o, k in pairs if clear(diffs[o][k])]
    arms = sorted({o for o, _ in pairs})
    sizes = [k for k in keys if any(k == kk for _, kk in pairs)]
    names = ", ".join(SHORT.get(a, a) for a in arms)
    compared = (f"{m} comparisons: the fine-tuned model (LP-FT) against {names} at {len(sizes)} "
                f"size{'s' * (len(sizes) != 1)} ({', '.join(sizes)})")
    if comps:
        text = f"{compared}; {len(comps)} survive{'s' * (len(comps) == 1)} the correction. " + " ".join(c["text"] for c in comps)
    else:
        text = (f"{compared}; none shows a difference that survives the correction for {m} comparisons: "
                "add seeds or examples before claiming one.")
    return {"text": text, "m": m, "compared": {"arms": arms, "sizes": sizes}, "comparisons": comps}


def readout_words(results: dict, metric: str, majority: dict | None) -> dict:
    zero = (results.get("readout") or {}).get("0")
    if not zero or zero.get("mean") is None:
        return {"zero": None, "text": None}
    what = "accuracy" if metric == "accuracy" else "F1 on the rarer tag"
    base = f" (always answering the most common label: {100 * majority['score']:.1f})" if majority else ""
    return {"zero": zero, "text": f"Before any label, the model already scores {100 * zero['mean']:.1f} {what} "
                                  f"reading its own pretrained head{base}."}


def summarize(outcomes: list[tuple[dict, object]], arms: list[str], sizes: list, metric: str,
              majority: dict | None = None) -> dict:
    """outcomes: (result event, per-test-example counts) of every fine-tune (the readout's size 0 too)."""
    keys = [str(s) for s in sizes]
    by: dict = {}
    for r, u in outcomes:
        by.setdefault(r["arm"], {}).setdefault(str(r["size"]), {})[r["seed"]] = (r, u)
    ran = [a for a in arms if a in by]
    cols = {a: (["0"] if "0" in by[a] else []) + keys for a in ran}
    results = {a: {k: interval([u for _, u in by[a].get(k, {}).values()], metric) for k in cols[a]} for a in ran}
    out = {"metric": metric, "interval": METHOD, "results": results, "readout": readout_words(results, metric, majority),
           "same_answer": {a: {k: sum(r["same_answer"] for r, _ in by[a].get(k, {}).values()) for k in cols[a]} for a in ran},
           "steps": {a: {k: _mean([r.get("steps") for r, _ in by[a].get(k, {}).values()]) for k in cols[a]} for a in ran},
           "choices": {a: {k: [{c: r[c] for c in CHOICE_KEYS if c in r} for r, _ in by[a].get(k, {}).values()]
                           for k in cols[a]} for a in ran}}
    if "full" in by:
        diffs = {}
        for other in ran:
            if other == "full":
                continue
            diffs[other] = {k: paired_difference({s: u for s, (_, u) in by["full"].get(k, {}).items()},
                                                 {s: u for s, (_, u) in by[other].get(k, {}).items()}, metric)
                            for k in keys}
        out["headline"] = headline(diffs, keys, metric)
        out["differences"] = diffs
        if "scratch" in diffs:
            out["difference"] = {"of": ["full", "scratch"], "by_size": diffs["scratch"]}
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
