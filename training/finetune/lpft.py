"""The trained arms' recipes (issue 32), each choosing its settings on the validation slice
(training/finetune/loop.py's train_arm keeps the best check of one run):

    full     LP-FT (Kumar et al., 2022, "Fine-Tuning can Distort Pretrained Features"): first a
             class-weighted logistic-regression head fitted on the frozen pretrained encoder's
             features (the linear probe, its C chosen on the slice), put into the head; then every
             weight fine-tuned from there at a small learning rate: cfg.lr["full"] and its
             neighbours on LADDER, widened while an end of what was tried wins (rate_search). The
             rate and the step (step 0 = the probe's head alone) with the best slice score are
             kept: fine-tuning that does not help on the slice is not kept.
    scratch  the same architecture from random weights and a smaller one (model.SMALL), each
             with its own rate search around cfg.lr["scratch"]; the better on the slice is kept,
             and the result says which ("model").
"""
from __future__ import annotations

from .loop import LADDER, FinetuneConfig, TaskData, _state, predict, train_arm
from .model import Classifier, build_classifier


def probe_head(model: Classifier, data: TaskData, fit: list[int], val: list[int], seed: int) -> dict:
    """LP: the head becomes a class-weighted regression on the frozen encoder's features of the fit
    examples (C chosen on the validation ones)."""
    from . import linear as lin

    feats = [lin.ProbeFeatures._features(model, data, [data.train[i] for i in rows], 64) for rows in (fit, val)]
    X, y = lin._stack(feats[0], [data.train[i][1] for i in fit], data.kind)
    Xv, yv = lin._stack(feats[1], [data.train[i][1] for i in val], data.kind)
    clf, scaler, C, _, edge = lin._fit(X, y, Xv, yv, len(data.labels), seed, scale=True,
                                       majority=None if data.kind == "sequence" else data.majority)
    lin.head_from_regression(model, clf, scaler, len(data.labels))
    return {"C": C, "C_at_edge": edge}


def _key(info: dict) -> tuple:
    return (info["val_score"] or 0.0, -(info["val_loss"] or 0.0))


def rate_search(make, center: float, data: TaskData, fit: list[int], val: list[int], seed: int,
                cfg: FinetuneConfig) -> tuple:
    """Train make(lr) -> (model, extra) at `center` and its two neighbours on the ladder of rates,
    then keep widening on whichever side wins (a higher rate while the highest tried is best, a
    lower one while the lowest is), so the rate kept is inside what was tried unless the ladder
    ends (issue 42: the old two-rate grids chose their edge on 5 of 5 seeds). Returns (key, model,
    info, state) of the best on the slice; info says "rates_tried" and "lr_at_edge"."""
    i = LADDER.index(center)
    lo, hi = max(0, i - 1), min(len(LADDER) - 1, i + 1)
    tried: dict = {}
    rank = lambda j: (*tried[j][0], -abs(j - i))  # noqa: E731  a tie goes to the rate nearest the centre

    def run(j: int):
        model, extra = make(LADDER[j])
        info = train_arm(model, LADDER[j], data, fit, val, seed, cfg) | {"lr": LADDER[j]} | extra
        tried[j] = (_key(info), model, info, _state(model))

    if cfg.fixed_steps:  # no slice, no choosing: the centre rate only
        run(i)
    else:
        for j in range(lo, hi + 1):
            run(j)
        while True:
            best = max(tried, key=rank)
            if best == min(tried) and best > 0:
                run(best - 1)
            elif best == max(tried) and best < len(LADDER) - 1:
                run(best + 1)
            else:
                break
    best = max(tried, key=rank)
    key, model, info, state = tried[best]
    edge = not cfg.fixed_steps and best in (min(tried), max(tried))
    info = info | {"rates_tried": [LADDER[j] for j in sorted(tried)], "lr_at_edge": edge}
    return key, model, info, state


def full_lpft(pretrained, data: TaskData, fit: list[int], val: list[int], seed: int, cfg: FinetuneConfig):
    model = build_classifier("full", pretrained, len(data.labels), data.kind, seed)
    lp = probe_head(model, data, fit, val, seed) if val else {}
    start = _state(model)

    def make(lr):
        model.load_state_dict(start)
        return model, lp

    _, model, info, state = rate_search(make, cfg.lr["full"], data, fit, val, seed, cfg)
    model.load_state_dict(state)
    return model.eval(), info


def scratch_pair(pretrained, data: TaskData, fit: list[int], val: list[int], seed: int, cfg: FinetuneConfig):
    """Each model size searches its own rate; the better on the slice is kept."""
    found = []
    for small in ((False,) if cfg.fixed_steps else (False, True)):
        def make(lr, small=small):
            m = build_classifier("scratch", pretrained, len(data.labels), data.kind, seed, small=small)
            c = m.encoder.cfg
            return m, {"model": f"{c.n_layer} layers x {c.n_embd}" + (" (smaller)" if small else "")}

        found.append(rate_search(make, cfg.lr["scratch"], data, fit, val, seed, cfg))
    _, model, info, state = max(found, key=lambda f: f[0])
    model.load_state_dict(state)
    return model.eval(), info


def finetune_one(pretrained, data: TaskData, arm: str, size: int | None, seed: int,
                 cfg: FinetuneConfig) -> tuple[Classifier, list, dict]:
    """Build, train and answer the held-out examples: (model, predictions, info with "examples",
    "validation", "steps", "best_step", "still_improving", "lr", ...)."""
    chosen = data.choose(size, seed)
    fit, val = (chosen, []) if cfg.fixed_steps else data.split(chosen, seed, cfg.val_share)
    recipe = full_lpft if arm == "full" else scratch_pair
    model, info = recipe(pretrained, data, fit, val, seed, cfg)
    return model, predict(model, data, data.test, cfg), info | {"examples": len(chosen), "validation": len(val)}
