"""The trained arms' recipes (issue 32), each choosing its settings on the validation slice
(training/finetune/loop.py's train_arm keeps the best check of one run):

    full     LP-FT (Kumar et al., 2022, "Fine-Tuning can Distort Pretrained Features"): first a
             class-weighted logistic-regression head fitted on the frozen pretrained encoder's
             features (the linear probe, its C chosen on the slice), put into the head; then every
             weight fine-tuned from there at a small learning rate, for each rate of the grid
             (cfg.lr["full"]). The rate and the step (step 0 = the probe's head alone) with the best
             slice score are kept: fine-tuning that does not help on the slice is not kept.
    scratch  the same architecture from random weights and a smaller one (model.SMALL),
             each trained at every rate of cfg.lr["scratch"]; the better on the slice is kept, and
             the result says which ("model").
"""
from __future__ import annotations

from .loop import FinetuneConfig, TaskData, _state, predict, train_arm
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


def _best_of(candidates, data: TaskData, fit: list[int], val: list[int], seed: int, cfg: FinetuneConfig):
    """Train each (model, lr, extra info) and keep the best on the slice: (model, info)."""
    best = None
    for model, lr, extra in candidates:
        info = train_arm(model, lr, data, fit, val, seed, cfg) | {"lr": lr} | extra
        key = (info["val_score"] or 0.0, -(info["val_loss"] or 0.0))
        if best is None or key > best[0]:
            best = (key, model, info, _state(model))
        if cfg.fixed_steps:
            break
    _, model, info, state = best
    model.load_state_dict(state)
    return model.eval(), info


def full_lpft(pretrained, data: TaskData, fit: list[int], val: list[int], seed: int, cfg: FinetuneConfig):
    model = build_classifier("full", pretrained, len(data.labels), data.kind, seed)
    lp = probe_head(model, data, fit, val, seed) if val else {}
    start = _state(model)

    def runs():
        for lr in cfg.lr["full"]:
            model.load_state_dict(start)
            yield model, lr, lp

    return _best_of(runs(), data, fit, val, seed, cfg)


def scratch_pair(pretrained, data: TaskData, fit: list[int], val: list[int], seed: int, cfg: FinetuneConfig):
    def runs():
        for small in (False, True):
            for lr in cfg.lr["scratch"]:
                m = build_classifier("scratch", pretrained, len(data.labels), data.kind, seed, small=small)
                cfg_m = m.encoder.cfg
                yield m, lr, {"model": f"{cfg_m.n_layer} layers x {cfg_m.n_embd}" + (" (smaller)" if small else "")}

    return _best_of(runs(), data, fit, val, seed, cfg)


def finetune_one(pretrained, data: TaskData, arm: str, size: int | None, seed: int,
                 cfg: FinetuneConfig) -> tuple[Classifier, list, dict]:
    """Build, train and answer the held-out examples: (model, predictions, info with "examples",
    "validation", "steps", "best_step", "still_improving", "lr", ...)."""
    chosen = data.choose(size, seed)
    fit, val = (chosen, []) if cfg.fixed_steps else data.split(chosen, seed, cfg.val_share)
    recipe = full_lpft if arm == "full" else scratch_pair
    model, info = recipe(pretrained, data, fit, val, seed, cfg)
    return model, predict(model, data, data.test, cfg), info | {"examples": len(chosen), "validation": len(val)}
