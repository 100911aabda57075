"""benchmarks/run_watchers.py runs end to end with a handful of watchers and a small history (a real
server process; a finished run and a running one) and prints every figure. No timing is asserted:
the figures are for docs/training.md, not a pass mark."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from app.config import REPO

F = r"(?:-?[\d.]+|nan)"


@pytest.mark.slow
@pytest.mark.parametrize("running", [False, True])
def test_the_run_watchers_benchmark_prints_every_figure(running):
    done = subprocess.run([sys.executable, "-m", "benchmarks.run_watchers", "--watchers", "5", "--history-kb", "60",
                           "--closers", "6", "--timeout", "60", *(["--running"] if running else [])],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert done.returncode == 0, done.stderr
    state = "running" if running else "finished"
    for pattern in [rf"run watchers: 5 watchers of a {state} run, load generator niced",
                    rf"history: {F} KB, \d+ events",
                    rf"server RSS: before {F} MB, peak {F} MB, growth {F} MB \(target < 50 MB\), after {F} MB",
                    rf"completed the history: 5/5 \(all ended {F} s after the first request\)",
                    rf"time to the full history: p50 {F} s, max {F} s \(target: all within 10 s\)",
                    rf"early closes: 6 clients left after the first event \(half with a reset\): server log "
                    rf"\+\d+ bytes, \d+ lines \({F} bytes per client\), 0 'Traceback', 0 'Exception in ASGI "
                    rf"application'; RSS then {F} MB",
                    r"cpu: .+, \d+ cores, flags .+, load average"]:
        assert re.search(pattern, out), (pattern, out)
    assert "error:" not in out, out
    size = float(re.search(r"history: ([\d.]+) KB", out).group(1))
    assert 55 <= size <= 70, out  # about --history-kb
