"""What the Objectives page's ELECTRA strip catches, measured the way the strip works.

The strip masks positions of a held-out sentence, lets the set's BERT fill EVERY one with a draw
from its guess (app/tasks/electra.py `generator_fill`, the app's seeded stream), and shows the
discriminator's p(replaced) at every character. Here: the IsNext pairs of the set's NSP quiz bank
(held-out plays), 15 % of their characters chosen with a fixed seed; and the same positions filled
with uniformly random characters. Prints one JSON object: replaced characters caught at p > 0.5,
originals flagged, and the area under the ROC curve, for each kind of fill.

    python -m benchmarks.electra_strip [--models models] [--items 100]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import onnxruntime as ort

from app.contract import FIRST_CHAR, Vocab
from app.tasks.bert import BERT
from app.tasks.electra import ELECTRA, generator_fill


def auc(scores: np.ndarray, truth: np.ndarray) -> float:
    """P(a replaced character scores above an original one), ties counted half."""
    pos, neg = scores[truth], scores[~truth]
    if not len(pos) or not len(neg):
        return float("nan")
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    allv = np.concatenate([pos, neg])[order]
    ranks = np.empty(len(allv))
    i = 0
    while i < len(allv):  # average ranks of ties
        j = i
        while j + 1 < len(allv) and allv[j + 1] == allv[i]:
            j += 1
        ranks[i:j + 1] = (i + j) / 2 + 1
        i = j + 1
    r = np.empty(len(allv))
    r[order] = ranks
    return float((r[:len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def figures(p: np.ndarray, truth: np.ndarray) -> dict:
    flagged = p > 0.5
    return {"replaced": int(truth.sum()), "caught": round(float((flagged & truth).sum() / max(1, truth.sum())), 4),
            "originals_flagged": round(float((flagged & ~truth).sum() / max(1, (~truth).sum())), 4),
            "auc": round(auc(p, truth), 4)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="models")
    ap.add_argument("--items", type=int, default=100)
    ap.add_argument("--rate", type=float, default=0.15)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    folder = Path(args.models)
    vocab = Vocab.load(folder / "vocab.json")
    cards = {n: json.loads((folder / f"{n}.card.json").read_text(encoding="utf-8")) for n in ("bert", "electra")}
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    bert = BERT(ort.InferenceSession(str(folder / "bert.onnx"), opts), vocab, cards["bert"]["config"])
    disc = ELECTRA(ort.InferenceSession(str(folder / "electra.onnx"), opts), vocab, cards["electra"]["config"])
    quiz = json.loads((folder / "nsp_quiz.json").read_text(encoding="utf-8"))
    items = [it for it in quiz["items"] if it.get("is_next")][: args.items]
    rng = np.random.default_rng(args.seed)
    kinds = {"bert_fill": ([], []), "random_fill": ([], [])}
    room = disc.context - 2
    for n, it in enumerate(items):
        text = (it["a"] + "\n" + it["b"])[:room]
        ids, _ = vocab.encode(text)
        positions = [i for i in range(len(ids)) if ids[i] >= FIRST_CHAR and rng.random() < args.rate]
        if not positions:
            continue
        fills = {"bert_fill": generator_fill(bert, ids, positions, seed=args.seed * 1000 + n),
                 "random_fill": [int(rng.integers(FIRST_CHAR, vocab.size)) if i in positions else t
                                 for i, t in enumerate(ids)]}
        for kind, shown in fills.items():
            p = disc.replaced_probs(shown)
            kinds[kind][0].append(p)
            kinds[kind][1].append(np.array([s != o for s, o in zip(shown, ids)]))
    out = {"items": len(items), "rate": args.rate, "seed": args.seed,
           "training_card": {k: cards["electra"]["evaluation"]["validation"].get(k) for k in ("auc", "replaced_recall", "original_flagged")}}
    for kind, (ps, ts) in kinds.items():
        out[kind] = figures(np.concatenate(ps), np.concatenate(ts))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
