"""benchmarks/class_load.py --write-loop (issue 53 must 7) runs end to end with a handful of students: a
joined student loops its own join and then answers on 4 connections around the answer phase, is
refused past its write budget, and every answer (its one accepted answer too) is counted once. Only
counts are asserted, never a time: the loop spends its budget until its first 429 before the answers
start, so the refusal is there however fast or slow this machine is."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from app.classes.writers import WRITE_BURST, WRITE_EVERY_S
from app.config import REPO

F = r"-?[\d.]+"


@pytest.mark.slow
def test_a_joined_student_looping_writes_is_refused_and_every_answer_still_counts_once():
    done = subprocess.run([sys.executable, "-m", "benchmarks.class_load", "--students", "5", "--join-ramp", "0.5",
                           "--think", "0.5", "--double-share", "0.5", "--seed", "3", "--write-loop", "4",
                           "--port", "8822", "--json"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert done.returncode == 0, (out, done.stderr)
    assert re.search(rf"write loop from 127\.1\.0\.2 \(a joined student\), 4 connections: first its own POST join "
                     rf"until refused \(\d+ answered 200 in {F} s, then \d+ refused 429\), then for {F} s around every "
                     rf"answer: joins \d+ 200, \d+ 429, 0 other; answers \d+ 201, \d+ 409, \d+ 429, 0 other", out), out
    assert "every answer counted exactly once: yes" in out and "error:" not in out
    r = json.loads(out.strip().rsplit("\n", 1)[-1])
    loop = r["write_loop"]
    assert loop["over_budget_before_answers"] and loop["covered_answers"]
    # its first join was a new nickname (not this budget); then the burst and what refilled meanwhile, then refused
    assert WRITE_BURST <= loop["spend"]["200"] <= WRITE_BURST + loop["spend_s"] / WRITE_EVERY_S + 1
    assert loop["spend"]["429"] >= 1
    assert set(loop["join"]) <= {"200", "429"} and set(loop["answer"]) <= {"201", "409", "429"}
    accepted = loop["answer"].get("201", 0)
    assert accepted <= 1  # a student answers an item once, however often it sends
    assert r["accepted"] == r["joined"] == 5 and r["error_count"] == 0
    assert r["database"]["rows"] == r["database"]["students"] == 5 + accepted
    assert sum(r["results_counts"].values()) == 5 + accepted
