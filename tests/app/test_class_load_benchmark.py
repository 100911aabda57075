"""benchmarks/class_load.py runs end to end with a handful of students (a real server process, one
worker and two) and prints every figure; its counts agree three ways. No timing is asserted: the
figures are for docs/classroom.md, not a pass mark."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from app.config import REPO

F = r"-?[\d.]+"


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_the_class_load_benchmark_prints_every_figure_and_counts_each_answer_once(workers):
    done = subprocess.run([sys.executable, "-m", "benchmarks.class_load", "--students", "5", "--join-ramp", "0.5",
                           "--think", "0.5", "--double-share", "0.5", "--workers", str(workers), "--seed", "3"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert done.returncode == 0, done.stderr
    for pattern in [rf"class load: 5 students, 2 dashboards, {workers} worker\(s\), load generator niced",
                    rf"join: 5/5 joined in {F} s \(target <= 10 s\); join p99 {F} ms",
                    rf"answers: \d+ POSTs in {F} s after follow-me \(target <= 5 s\); p50 {F} ms, p99 {F} ms "
                    rf"\(target <= 250 ms\), max {F} ms",
                    rf"follow-me reached 5 streams: p50 {F} s, max {F} s",
                    rf"dashboards showed the final count after the last answer: {F} s, {F} s \(target <= 2 s\)",
                    r"every answer counted exactly once: yes",
                    rf"server CPU time: {F} s over the {F} s run",
                    r"cpu: .+, \d+ cores, flags .+, load average"]:
        assert re.search(pattern, out), (pattern, out)
    assert "error:" not in out
    counts = re.search(r"counts: accepted (\d+), double-taps refused 409: (\d+), errors 0; sent (\{.*?\}), "
                       r"database (\{.*?\}) \((\d+) rows, (\d+) students\), results (\{.*?\})", out)
    assert counts, out
    accepted, refused, sent, database, rows, people, results = counts.groups()
    sent, database, results = json.loads(sent), json.loads(database), json.loads(results)
    assert int(accepted) == int(rows) == int(people) == 5 == sum(sent.values())
    assert int(refused) >= 1  # seed 3 makes some students double-tap; each second tap is refused
    assert {k: sent.get(k, 0) for k in ("IsNext", "NotNext")} == {k: database.get(k, 0) for k in ("IsNext", "NotNext")}
    assert results == {k: sent.get(k, 0) for k in ("IsNext", "NotNext")}
