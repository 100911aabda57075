"""What a fine-tune job has done, from the facts: the JSON lines `python -m training finetune`
printed (kept in the job's events.jsonl). Pure functions, no I/O: the job manager, the API and the
tests all fold the same lines the same way.

Lines (one JSON object each; unknown events and fields are kept, never fatal):
    start       task, kind (sequence|token), metric (accuracy|f1), labels, arms, sizes, seeds, n_train,
                n_test, device, jobs, skipped, notes, majority, readout (how the task is read), estimate
                (seconds, step_seconds, jobs, workers, text, time_left {seconds, text}: a step timed at the
                start, app/contract/finetune_cost.py)
    result      arm, size, seed, score (the metric's value), accuracy, n_test, steps, same_answer,
                seconds, cpu_seconds, time_left {seconds, text, scale} (and step, fine-tuning from snapshots)
    classifier  arm, dir (a model-set folder under the job's output), accuracy
    gpt_way     GPT's zero-training answer (scored continuations, with its answer counts)
    summary     results {arm: {size: {mean, lo, hi, n}}} (Student's t over seeds; "interval" names the
                method), difference, differences, headline (Bonferroni-corrected claims), same_answer,
                steps, cpu_seconds, device, majority, skipped, readout, choices, evidence (can the test part
                carry a comparison: app/contract/finetune_evidence.py), gpt_way; from snapshots
                also by_step [{model, step, mean, lo, hi, n}] (then the summary here is by step)
    error       message

Until the summary arrives, `so_far` is a quick t-interval over the seeds done, kept inside 0-1 (the
trainer's summary replaces it with its own, the method named in its "interval").
"""
from __future__ import annotations

import math

# Student's t, two-sided 95 %, by degrees of freedom (1..30); beyond, the normal 1.96.
T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
       2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
       2.045, 2.042]


def interval(values: list[float]) -> dict:
    """Mean and 95 % interval of the mean (Student's t over seeds); one value: no interval."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return {"mean": mean, "lo": None, "hi": None, "n": n}
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = (T95[n - 2] if n - 2 < len(T95) else 1.96) * sd / math.sqrt(n)
    return {"mean": mean, "lo": max(0.0, mean - half), "hi": min(1.0, mean + half), "n": n}


FINAL_KEYS = ("metric", "headline", "differences", "same_answer", "steps", "cpu_seconds", "majority", "skipped",
              "interval", "readout", "choices", "device", "evidence")


def size_key(size) -> str:
    return str(size)


def partial_summary(results: list[dict], by: str = "size") -> dict:
    """{arm: {size (or step): interval}} over the results so far (the CLI's summary replaces it)."""
    groups: dict[str, dict[str, list[float]]] = {}
    for r in results:
        key = r.get(by)
        value = r.get("score", r.get("accuracy"))
        if key is None or not isinstance(value, (int, float)):
            continue
        groups.setdefault(str(r.get("arm")), {}).setdefault(size_key(key), []).append(float(value))
    return {arm: {k: interval(v) for k, v in sizes.items()} for arm, sizes in groups.items()}


def new_state() -> dict:
    return {"start": None, "results": [], "classifiers": [], "gpt_way": None, "summary": None,
            "difference": None, "final": None, "metric": None, "error": None, "done": 0, "total": None}


def fold_one(state: dict, e: dict) -> None:
    """Fold one event line into the state (as it arrives)."""
    kind = e.get("event")
    if kind == "start":
        state["start"] = {k: v for k, v in e.items() if k != "event"}
        state["total"] = e.get("jobs")
        state["metric"] = e.get("metric", "accuracy")
    elif kind == "result":
        state["results"].append({k: v for k, v in e.items() if k != "event"})
        state["done"] += 1
    elif kind == "classifier":
        state["classifiers"].append({k: v for k, v in e.items() if k != "event"})
    elif kind == "gpt_way":
        state["gpt_way"] = {k: v for k, v in e.items() if k != "event"}
    elif kind == "summary":
        state["summary"] = e.get("results")
        if isinstance(e.get("by_step"), list):  # from snapshots: the full arm, by pretraining step
            state["summary"] = {"full": {str(b.get("step")): {k: b.get(k) for k in ("mean", "lo", "hi", "n")}
                                         for b in e["by_step"] if isinstance(b, dict)}}
        state["difference"] = e.get("difference")
        state["final"] = {k: v for k, v in e.items() if k in FINAL_KEYS}
        if e.get("gpt_way") is not None:
            state["gpt_way"] = e.get("gpt_way")
    elif kind == "error":
        state["error"] = e.get("message")


def finish(state: dict) -> dict:
    """The job's results so far as shown: a copy of the folded state with `by` and `so_far`."""
    out = {**state, "results": list(state["results"]), "classifiers": list(state["classifiers"])}
    out["by"] = "step" if any("step" in r for r in out["results"]) else "size"
    out["so_far"] = partial_summary(out["results"], out["by"])
    return out


def fold(lines: list[dict]) -> dict:
    """The job's results so far from its event lines, in order."""
    state = new_state()
    for e in lines:
        fold_one(state, e)
    return finish(state)
