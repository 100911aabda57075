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


@pytest.mark.slow
def test_one_address_looping_reads_is_refused_past_its_budget_and_every_answer_still_counts_once():
    """--read-loop (issue 43): 127.0.0.2, no student, asks for 10 event streams, spends its burst until
    its first 429, then loops GET /api/sessions/CODE on 4 connections through the whole answer phase.
    Its address budget (120 at once, then 30 a second; 8 streams) is what it gets; the class's answers
    are each counted once. Nothing here depends on how fast the machine sends: the loop is refused
    because it reads until it is (before the answers start), not because it outran the refill."""
    from app.classes.readers import ADDRESS_BURST, ADDRESS_EVERY_S, STREAMS_PER_ADDRESS

    done = subprocess.run([sys.executable, "-m", "benchmarks.class_load", "--students", "5", "--join-ramp", "0.5",
                           "--think", "0.5", "--double-share", "0.5", "--seed", "3", "--read-loop", "4",
                           "--stream-flood", "10", "--port", "8762", "--json"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert done.returncode == 0, (out, done.stderr)
    assert re.search(rf"read loop from 127\.0\.0\.2 \(no student: they are on 127\.0\.0\.3\.\.127\.0\.0\.7\), "
                     rf"4 connections: first spent its burst \(\d+ answered 200 in {F} s, then refused\), "
                     rf"then GET /api/sessions/CODE for {F} s around every answer: \d+ answered 200, "
                     rf"\d+ refused 429 in all, 0 other", out), out
    assert "stream flood from 127.0.0.2: 10 event streams asked, 8 held open, 2 refused 429, 0 other" in out, out
    assert "every answer counted exactly once: yes" in out
    r = json.loads(out.strip().rsplit("\n", 1)[-1])
    loop = r["read_loop"]
    assert loop["covered_answers"] and loop["other"] == {}
    assert loop["over_budget_before_answers"] and loop["spend_refused"] >= 1  # it read until it was refused
    # the burst it spent before the first 429: the burst (less the stream requests it paid for first),
    # plus what refilled while it spent
    assert ADDRESS_BURST - loop["streams"] <= loop["spend_ok"] <= ADDRESS_BURST + loop["spend_s"] / ADDRESS_EVERY_S + 1
    # never more than the budget: every request it made (streams included) fell inside span_s
    assert loop["ok"] + loop["streams"] <= ADDRESS_BURST + loop["span_s"] / ADDRESS_EVERY_S + 1
    assert loop["streams_open"] == STREAMS_PER_ADDRESS and loop["streams_refused"] == 10 - STREAMS_PER_ADDRESS
    assert r["accepted"] == r["joined"] == 5 == r["database"]["rows"] == r["database"]["students"]
    assert r["error_count"] == 0 and r["posts"] == r["accepted"] + r["refused_409"]
