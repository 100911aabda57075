"""The fine-tune lab's summary line: every arm's score per size with its 95 % interval (seed level,
training/finetune/stats.py), the paired differences of the full fine-tune against each other arm,
and a headline that names how many comparisons were made and claims only what survives the
correction for that many (Bonferroni).

    {"event": "summary", "task", "metric": "accuracy" | "f1", "interval": METHOD,
     "results": {arm: {size: {"mean", "lo", "hi", "n", "per_seed"}}}     readout's zero-label rule under "0"
     "readout": {"zero": {...} | None, "text"}                           what the model knows before any label
     "difference": {"of": ["full", "scratch"], "by_size": {...}},
     "differences": {arm: {size: {"mean", "lo", "hi", "n", "seeds", "per_seed", "corrected"}}}  full minus arm (COMPARED)
     "headline": {"text", "m", "compared": {"arms", "sizes"}, "comparisons": [{"of", "size", "difference"}]}
     "choices": {arm: {size: [per seed: the settings chosen on the validation slice]}},
     "evidence": {"enough", "n_test", "rare", "minimum", "text"}        can the test part carry a comparison?
     "same_answer", "steps", "cpu_seconds", "majority", "skipped", "gpt_way"}

Below the minimum of app/contract/finetune_evidence.py (20 test texts; per character 10 of the rarer
tag in 5 texts) no arm is compared with another: the headline says so and what the test texts can
say (each arm's score and answers); the differences are kept as numbers, uncorrected, claimed nowhere.
An interval of zero width (every seed the same difference) is never a claim: "no difference measurable".
"""
from __future__ import annotations

from app.contract.finetune_evidence import evidence as evidence_of

from .stats import METHOD, clear, corrected, interval, paired_difference, zero_width

ARM_WORDS = {"full": "the pretrained model fine-tuned (LP-FT)", "scratch": "the same model from scratch",
             "probe": "the linear probe", "ngram": "character n-grams (no pretraining)",
             "readout": "the pretrained model's own head with one threshold"}
SHORT = {"readout": "the readout", "probe": "the linear probe", "scratch": "the model from scratch",
         "ngram": "character n-grams"}
NAMED = {"full": "LP-FT (the pretrained model fine-tuned)", **SHORT}
# The arms LP-FT is compared with (issue 42: one correction over every comparison the page and the docs
# make): what the model knows with no labels taught (readout), the same model with no pretraining
# (scratch), the simplest honest baseline (n-grams). The probe is LP-FT's own first stage: shown, not compared.
COMPARED = ("readout", "scratch", "ngram")
CHOICE_KEYS = ("C", "C_at_edge", "lr", "lr_at_edge", "rates_tried", "best_step", "still_improving", "model", "threshold", "stopped")


def size_words(size: str) -> str:
    return "all the labelled examples" if size == "all" else f"{size} labelled examples"


def claim_text(other: str, size: str, d: dict, metric: str) -> str:
    unit = "points of accuracy" if metric == "accuracy" else "points of F1"
    side = "above" if d["mean"] > 0 else "below"
    c = d["corrected"]
    return (f"With {size_words(size)}, {ARM_WORDS['full']} scores {abs(100 * d['mean']):.1f} {unit} {side} "
            f"{ARM_WORDS[other]} (interval corrected for {c['m']} comparisons: {100 * c['lo']:+.1f} to "
            f"{100 * c['hi']:+.1f}).")


def flat_text(other: str, size: str, d: dict) -> str:
    """A difference whose interval has zero width: every seed gave the same difference."""
    if abs(d["mean"]) < 1e-12:
        return (f"with {size_words(size)}, LP-FT and {SHORT.get(other, other)}: no difference measurable "
                "(the same score on every seed)")
    return (f"with {size_words(size)}, LP-FT and {SHORT.get(other, other)}: {100 * d['mean']:+.1f} points on every "
            "seed alike, an interval of zero width: no difference measurable, so no claim")


def headline(diffs: dict, keys: list[str], metric: str) -> dict:
    """Every (arm, size) difference is one comparison; m of them; the clear ones after correction
    (an interval of zero width is never clear: said as "no difference measurable")."""
    pairs = [(o, k) for o in diffs for k in keys if diffs[o].get(k, {}).get("n")]
    m = len(pairs)
    for o, k in pairs:
        diffs[o][k]["corrected"] = corrected(diffs[o][k], m)
    comps = [{"of": ["full", o], "size": k, "difference": diffs[o][k], "text": claim_text(o, k, diffs[o][k], metric)}
             for o, k in pairs if clear(diffs[o][k])]
    flat = [{"of": ["full", o], "size": k, "text": flat_text(o, k, diffs[o][k])}
            for o, k in pairs if diffs[o][k].get("n", 0) > 1 and zero_width(diffs[o][k])]
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
    if flat:
        said = "; ".join(f["text"] for f in flat)
        text += f" {said[0].upper()}{said[1:]}."
    return {"text": text, "m": m, "compared": {"arms": arms, "sizes": sizes}, "comparisons": comps, "flat": flat}


def size_said(k: str, cells: list[tuple[str, dict]], same_answer: dict) -> str:
    """One size below the minimum, in words: each arm's score, and which gave one answer to every text
    (a no-break space before each %: a projector's line never starts with one)."""
    name = lambda a: "the readout (one threshold)" if a == "readout" else NAMED.get(a, a)  # noqa: E731
    text = f"With {size_words(k)}: " + ", ".join(f"{name(a)} {100 * c['mean']:.1f}\u00a0%" for a, c in cells) + "."
    same = [(a, (same_answer.get(a) or {}).get(k) or 0, c["n"]) for a, c in cells]
    if all(n_same == n for _, n_same, n in same):
        return text + (" Every arm gave the same answer to every text, in every seed." if len(cells) > 1 else
                       " It gave the same answer to every text, in every seed.")
    said = [f"{'LP-FT' if a == 'full' else name(a)} in {n_same} of {n} seeds" for a, n_same, n in same if n_same]
    return text + (f" The same answer to every text: {', '.join(said)}." if said else "")


def scores_said(what: str, n: int, results: dict, keys: list[str], majority: dict | None) -> str:
    """Below the minimum, what the scores are and the one yardstick the texts still give: always answering the
    training part's most common label. When no arm scored above it at any size, that is said (nothing the
    arms learned shows on these texts); else the yardstick is stated for the reader to hold each score against."""
    where = f"on the {n} test text{'s' * (n != 1)}"
    if not majority:
        return f"{what[0].upper()}{what[1:]} {where}."
    base = f"always answering “{majority['label']}” ({100 * majority['score']:.1f}\u00a0%)"
    means = [by[k]["mean"] for by in results.values() for k in keys if by.get(k, {}).get("mean") is not None]
    if means and max(means) <= majority["score"]:
        return f"{where[0].upper()}{where[1:]}, no arm's {what} was above {base}."
    return f"{what[0].upper()}{what[1:]} {where}, beside {base}."


def below_minimum(ev: dict, results: dict, same_answer: dict, keys: list[str], metric: str,
                  majority: dict | None = None) -> dict:
    """The headline when the test part is below the minimum: no comparison; what the texts can say."""
    what = "accuracy" if metric == "accuracy" else "F1 of the rarer tag"
    said = []
    for k in keys:
        cells = [(a, by[k]) for a, by in results.items() if by.get(k, {}).get("mean") is not None]
        if cells:
            said.append(size_said(k, cells, same_answer))
    n = ev["n_test"]
    lead = ev["text"] + (" " + scores_said(what, n, results, keys, majority) if said else "")
    details = " ".join(said)  # each size's scores: the page sets them below the lead, in plain weight
    return {"text": f"{lead} {details}".strip(), "lead": lead, "details": details, "m": 0,
            "compared": {"arms": [], "sizes": []}, "comparisons": [], "flat": [], "below_minimum": True}


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
    ev = evidence_of_units(outcomes, metric)
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
    if ev is not None:
        out["evidence"] = ev
    if "full" in by:
        diffs = {}
        for other in ran:
            if other not in COMPARED:
                continue
            diffs[other] = {k: paired_difference({s: u for s, (_, u) in by["full"].get(k, {}).items()},
                                                 {s: u for s, (_, u) in by[other].get(k, {}).items()}, metric)
                            for k in keys}
        out["differences"] = diffs
        if "scratch" in diffs:
            out["difference"] = {"of": ["full", "scratch"], "by_size": diffs["scratch"]}
        if ev is not None and not ev["enough"]:  # no comparison: the differences stay numbers, claimed nowhere
            out["headline"] = below_minimum(ev, results, out["same_answer"], keys, metric, majority)
        else:
            out["headline"] = headline(diffs, keys, metric)
    elif ev is not None and not ev["enough"] and len(ran) > 1:
        out["headline"] = below_minimum(ev, results, out["same_answer"], keys, metric, majority)
    return out


def evidence_of_units(outcomes: list[tuple[dict, object]], metric: str) -> dict | None:
    """Can this test part carry a comparison? From the per-test-example counts (the same for every
    fine-tune): a row per test text; TP + FN = the characters of the rarer tags (per-character tasks)."""
    if not outcomes:
        return None
    u = outcomes[0][1]
    rare = None if metric == "accuracy" else int(u[:, 2].sum() + u[:, 4].sum())
    return evidence_of("sequence" if metric == "accuracy" else "token", int(u.shape[0]), rare)


def _mean(values: list) -> float | None:
    vals = [v for v in values if isinstance(v, (int, float))]
    return round(sum(vals) / len(vals), 1) if vals else None


def by_step(outcomes: list[tuple[dict, object]], metric: str) -> list[dict]:
    """The snapshot curve: the full arm's interval per snapshot, in pretraining order."""
    groups: dict = {}
    for r, u in outcomes:
        groups.setdefault((r["step"], r["model"]), []).append(u)
    return [{"model": m, "step": s, **interval(us, metric)} for (s, m), us in sorted(groups.items())]
