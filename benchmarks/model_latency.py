"""Per-request model time of two model sets side by side (e.g. the shipped set before and after a
retrain), in process, one onnxruntime thread, the two sets alternating so that both see the same
machine: BERT on one 60-character sentence (a mask-fill), ELECTRA on the same sentence (the
Objectives strip), GPT one cached step is unchanged by size and not measured here.

    python -m benchmarks.model_latency OLD_SET NEW_SET [--runs 300]
Prints one JSON line per set: median and p99 milliseconds per model.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort


def sessions(folder: Path) -> dict:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return {name: ort.InferenceSession(str(folder / f"{name}.onnx"), opts)
            for name in ("bert", "electra") if (folder / f"{name}.onnx").exists()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sets", nargs=2)
    ap.add_argument("--runs", type=int, default=300)
    args = ap.parse_args(argv)
    sets = {s: sessions(Path(s)) for s in args.sets}
    ids = np.random.default_rng(0).integers(5, 80, size=(1, 62)).astype(np.int64)
    feeds = {"input_ids": ids, "token_type_ids": np.zeros_like(ids)}
    times = {s: {m: [] for m in sess} for s, sess in sets.items()}
    for _ in range(args.runs):
        for s, sess in sets.items():
            for m, x in sess.items():
                t0 = time.perf_counter()
                x.run(None, feeds)
                times[s][m].append(1000 * (time.perf_counter() - t0))
    for s, per in times.items():
        print(json.dumps({"set": s, **{m: {"median_ms": round(float(np.median(v)), 3),
                                            "p99_ms": round(float(np.percentile(v, 99)), 3)} for m, v in per.items()}}))


if __name__ == "__main__":
    main()
