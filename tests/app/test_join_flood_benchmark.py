"""benchmarks/join_flood.py runs end to end with a handful of students (a real server process, a real
flooder on its own address) and prints every figure; every student joins and answers, the teacher's
calls succeed under the flood. No timing is asserted: the figures are for docs/reliability.md."""
from __future__ import annotations

import re

import pytest

F = r"-?[\d.]+"


@pytest.mark.slow
def test_the_join_flood_benchmark_serves_every_student_and_prints_every_figure(capsys):
    from benchmarks import join_flood

    join_flood.main(["--students", "5", "--connections", "4", "--join-ramp", "0.5", "--think", "0.3"])
    out = capsys.readouterr().out
    for pattern in [r"join flood: 5 students from their own addresses; 1 flooder \(127\.0\.0\.2\) on 4 connections; "
                    r"session of 60 places",
                    rf"every student joined: yes \(5/5\); join p99 {F} ms",
                    rf"answers: 5/5 accepted in {F} s; p50 {F} ms, p99 {F} ms, max {F} ms",
                    rf"flooder: \d+ joins in {F} s \({F}/s\), by status .*\"429\": \d+",
                    r"teacher under the flood: follow-me, lock the room, remove the silent -> \[200, 200, 200\]",
                    r"left in the class: 5 \(5 students\)",
                    r"server log tracebacks: 0",
                    r"the class and its teacher were served: yes"]:
        assert re.search(pattern, out), (pattern, out)
    got_in = int(re.search(r"nicknames it got in: (\d+)", out).group(1))
    assert got_in <= 20 + 10  # its burst, and one per 3 s over a run of well under 30 s
