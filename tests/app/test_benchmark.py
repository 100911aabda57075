"""app/benchmark.py runs end to end (tiny models, short load) and prints every figure."""
from __future__ import annotations

import re


def test_benchmark_prints_all_figures(tiny_models_dir, capsys):
    from app import benchmark

    benchmark.main(["--models-dir", str(tiny_models_dir), "--chars", "200", "--recompute-chars", "20",
                    "--seconds", "1", "--connections", "10"])
    out = capsys.readouterr().out
    for pattern in [r"KV-cached sampler\s+\d+ chars/s", r"recompute every char\s+\d+ chars/s", r"speed-up\s+[\d.]+ x",
                    r"one BERT forward at 62 chars = [\d.]+ ms", r"\d+ chars/s end to end",
                    r"served\s+\d+ req/s\s+p50\s+[\d.]+ ms\s+p99\s+[\d.]+ ms.*errors 0", r"served/ideal\s+[\d.]+%",
                    r"pid \d+:\s+[\d.]+ MB"]:
        assert re.search(pattern, out), pattern
