"""benchmarks/serving.py runs end to end (tiny models, short open-loop load) and prints every figure."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from app.config import REPO

N = r"(?:[\d.]+|nan)"  # a latency, or nan where an endpoint drew no request in a short run


@pytest.mark.slow
def test_benchmark_prints_all_figures(tiny_models_dir):
    done = subprocess.run([sys.executable, "-m", "benchmarks.serving", "--models-dir", str(tiny_models_dir),
                           "--chars", "200", "--recompute-chars", "20", "--calls", "5", "--rates", "5,10",
                           "--seconds", "1", "--burst", "5"], cwd=REPO, capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert done.returncode == 0, done.stderr
    for pattern in [r"KV-cached sampler\s+\d+ chars/s", r"recompute every char\s+\d+ chars/s",
                    r"cached / recompute\s+[\d.]+ x", r"mask-fill\s+[\d.]+ ms\s+\(60% of the mix\)",
                    r"mix mean\s+[\d.]+ ms\s+ideal rate = \d+ cores / mean = \d+ req/s", r"\d+ chars/s end to end",
                    r"load generator at niceness \+10",
                    (r"\s+5 req/s\s+mask-fill\s+N/\s*N\s+next-token\s+N/\s*N\s+generate\s+N/\s*N"
                     r"\s+nsp\s+N/\s*N").replace("N", N),
                    r"class capacity( \d+ req/s .* of the ideal|: none of the rates)",
                    r"at start\s+pid \d+:\s+[\d.]+ MB", r"2 s after 5 streams \(5 ok\)\s+pid \d+:\s+[\d.]+ MB"]:
        assert re.search(pattern, out), pattern
    assert "refused" not in out  # 5 and 10 req/s are far below any cap
