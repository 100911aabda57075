"""Why did ELECTRA sit at the prior? Small, equal-budget ELECTRA runs that each change one thing.

Each arm trains a small ELECTRA (2 layers, width 96, context 64) for the same number of steps on
the shipped corpus and is measured the way the card measures (training/electra.py
`evaluate_electra`: held-out windows, 15 % of characters filled by the model's own generator):
ROC AUC of p(replaced), the share of replaced characters caught at p > 0.5 and the share of
original characters flagged. One line of JSON per arm.

    python -m benchmarks.electra_diagnosis --steps 400 --arms base,adamw,small-gen
"""
from __future__ import annotations

import argparse
import json
import time

ARMS = {
    # name: (TrainConfig overrides, generator scale (share of the discriminator's width), generator layers)
    "base": ({}, 0.5, None),                      # the recipe of the last three tries: Muon, half-width generator
    "adamw": ({"optimizer": "adamw"}, 0.5, None),
    "small-gen": ({}, 0.25, 1),                   # a weaker generator: quarter width, one layer
    "small-gen-adamw": ({"optimizer": "adamw"}, 0.25, 1),
    "rtd-10": ({"extra": {"rtd_weight": 10.0}}, 0.5, None),
}


def run_arm(name: str, steps: int, seed: int) -> dict:
    from training import electra
    from training.train import TrainConfig, Trainer

    overrides, scale, layers = ARMS[name]
    cfg = TrainConfig(family="electra", out=f"runs/electra-diag/{name}", n_layer=2, n_head=4, n_embd=96, n_ff=256,
                      context=64, batch_size=48, steps=steps, seed=seed, eval_interval=10**9, threads=1,
                      schedule="wsd", **{k: v for k, v in overrides.items()})
    electra.GENERATOR_SCALE, electra.GENERATOR_LAYERS = scale, layers
    t0 = time.process_time()
    trainer = Trainer(cfg)
    rtd = []
    while trainer.progress() < 1.0:
        _, parts, _ = trainer.train_step()
        rtd.append(parts["rtd"])
    trainer.model.eval()
    ev = electra.evaluate_electra(trainer.model, trainer.tok, trainer.splits["validation"], n_rows=200)
    return {"arm": name, "steps": steps, "cpu_s": round(time.process_time() - t0, 1),
            "rtd_last50": round(sum(rtd[-50:]) / len(rtd[-50:]), 4), **{k: ev[k] for k in (
                "auc", "replaced_recall", "original_flagged", "replaced_share", "generator_masked_top1")}}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--arms", default=",".join(ARMS))
    args = ap.parse_args(argv)
    for name in args.arms.split(","):
        print(json.dumps(run_arm(name, args.steps, args.seed)), flush=True)


if __name__ == "__main__":
    main()
