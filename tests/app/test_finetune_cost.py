"""The fine-tune cost model's arithmetic and words (issue 42 must 3, app/contract/finetune_cost.py):
the grid it counts, what a job costs in steps, the wall time of a grid on a few cores, the sentence."""
from __future__ import annotations

import json
import math
import re

import pytest

from app.contract import finetune_cost as cost
from app.contract.task_format import parse_task

ARMS = ["readout", "full", "probe", "scratch", "ngram"]


def lines_task(n: int, length: int = 30, kind: str = "sequence"):
    """n labelled lines of `length` characters, alternating two labels (the seeded split takes 30 % to test)."""
    rows = [{"text": ("ab " * length)[:length], "label": "yes" if i % 2 else "no"} if kind == "sequence" else
            {"text": ("ab " * length)[:length], "tags": ("01" * length)[:length]} for i in range(n)]
    return parse_task("".join(json.dumps(r) + "\n" for r in rows), "t")


def test_the_grid_is_the_trainers_order_with_the_readouts_zero_label_rule_first():
    jobs = cost.grid(ARMS, [8, "all"], 3, zero_label=True)
    assert len(jobs) == 1 + 5 * 2 * 3 and jobs[0] == ("readout", 0, 0)
    assert jobs[1:6] == [("readout", 8, 0), ("ngram", 8, 0), ("probe", 8, 0), ("full", 8, 0), ("scratch", 8, 0)]
    assert jobs[-1] == ("scratch", "all", 2)
    capped = cost.grid(ARMS, [8, 32, "all"], 2, trained_up_to=8)
    assert {(a, s) for a, s, _ in capped if a in cost.TRAINED} == {("full", 8), ("scratch", 8)}
    assert cost.grid(["full"], [8], 2, zero_label=True) == [("full", 8, 0), ("full", 8, 1)]  # no readout arm, no rule


def test_the_validation_slice_is_the_trainers():
    seq, tok = cost.Shape(lines_task(20), 128), cost.Shape(lines_task(20, kind="token"), 128)
    assert cost.split_sizes(seq, 8) == (6, 2) and cost.split_sizes(seq, 14) == (10, 4)  # round(3.5) = 4
    assert cost.split_sizes(seq, 3) == (1, 2) and cost.split_sizes(tok, 32) == (24, 8) and cost.split_sizes(tok, 2) == (1, 1)
    assert cost.chosen(seq, "all") == seq.n_train == 14 and cost.chosen(seq, 500) == 14


def test_padded_length_is_the_batches_longest_text_plus_cls_and_sep_cut_at_the_context():
    assert cost.padded_length([10] * 5, 128) == 12.0
    assert cost.padded_length([500] * 5, 128) == 128.0
    rows = cost.sample_batches(3)
    assert len(rows) == cost.SAMPLE_BATCHES and all(len(b) == cost.BATCH and set(b) <= {0, 1, 2} for b in rows)
    assert cost.sample_batches(3) == rows  # the same rows every time: the trainer times the batches the server scales by


def test_a_trained_job_costs_its_runs_steps_and_a_small_batch_its_share():
    shape = cost.Shape(lines_task(60), 128)
    one = (1 + cost.COST["step_extra"])
    # --steps N: one run of N steps on every chosen text (16 or more: a whole batch), no slice, no LP head
    assert cost.trained_steps(shape, "full", 32, fixed_steps=20) - cost.trained_steps(shape, "full", 32, fixed_steps=10) \
        == pytest.approx(10 * one)
    assert cost.trained_steps(shape, "full", 8, fixed_steps=20) - cost.trained_steps(shape, "full", 8, fixed_steps=10) \
        == pytest.approx(10 * 8 / 16 * one)
    assert cost.trained_steps(shape, "scratch", 32, fixed_steps=10) == pytest.approx(cost.trained_steps(shape, "full", 32, fixed_steps=10))
    # the slice chooses: 3 runs at each rate search, 5 steps a check; scratch searches for two model sizes
    fit, val = cost.split_sizes(shape, 32)
    checks = cost.checks_per_run("full", val)
    run = 5 * checks * one + (checks + 1) * cost.forward(shape, val * shape.train_tokens)
    expected = (cost.COST["runs"] * run + cost.forward(shape, shape.test_tokens) + cost.COST["fit"]["lp_head"]
                + cost.forward(shape, 32 * shape.train_tokens))
    assert cost.trained_steps(shape, "full", 32) == pytest.approx(expected)
    s_checks = cost.checks_per_run("scratch", val)
    s_run = 5 * s_checks * one + (s_checks + 1) * cost.forward(shape, val * shape.train_tokens)
    assert cost.trained_steps(shape, "scratch", 32, small=0.25) == pytest.approx(
        cost.COST["runs"] * s_run * 1.25 + cost.forward(shape, shape.test_tokens))


def test_checks_per_run_follow_the_table_between_its_slices():
    table = cost.COST["checks"]["full"]
    assert cost.checks_per_run("full", 1) == table[min(table)]
    assert cost.checks_per_run("full", 1000) == table[max(table)]
    assert cost.checks_per_run("full", 16) == pytest.approx((table[8] + table[32]) / 2)  # halfway on a log scale


def test_the_first_readout_and_probe_jobs_pay_the_pass_over_every_example():
    shape = cost.Shape(lines_task(20, kind="token"), 128)
    first, later = cost.cheap_steps(shape, "readout", True), cost.cheap_steps(shape, "readout", False)
    assert later == cost.COST["fit"]["readout"] and first > later
    assert first - later == pytest.approx(cost.forward(shape, shape.readout_tokens) * cost.COST["readout_forward"]
                                          / cost.COST["forward"])
    costs = cost.job_steps(shape, [("probe", 8, 0), ("probe", 8, 1), ("ngram", 8, 0)])
    assert costs[0] > costs[1] == cost.COST["fit"]["probe"] and costs[2] == cost.COST["fit"]["ngram"]


def test_wall_time_on_two_cores_with_two_workers():
    jobs = [("ngram", 8, 0), ("full", 8, 0), ("full", 8, 1), ("scratch", 8, 0), ("scratch", 8, 1)]
    costs = [1, 100, 100, 100, 100]
    start, worker = 2.0, cost.COST["starts"]["worker"] * 2.0
    serial = cost.wall(jobs, costs, 0.1, start, workers=1, cores=2)
    assert serial == pytest.approx(start + 0.1 + 40)  # one process does everything
    two = cost.wall(jobs, costs, 0.1, start, workers=2, cores=2)
    assert two == pytest.approx(start + max(20 + worker, (40.1 + 2 * worker) / 2))  # halved, the starts paid
    assert cost.wall(jobs, costs, 0.1, start, workers=2, cores=1) == pytest.approx(start + 40.1 + 2 * worker)
    lopsided = cost.wall(jobs, [1, 300, 1, 1, 1], 0.1, start, workers=2, cores=2)
    assert lopsided == pytest.approx(start + 30 + worker)  # never faster than the longest job
    assert cost.wall(jobs, costs, 0.1, start, workers=2, cores=2, started=True) == pytest.approx(20.05)


def test_the_estimate_in_words():
    shape = cost.Shape(lines_task(40), 128)
    est = cost.estimate(shape, ARMS[1:], [8, "all"], 3, 0.12, 3.0, workers=2, cores=2)
    assert est["jobs"] == 24 and est["workers"] == 2 and len(est["costs"]) == 24
    minutes = est["seconds"] / 60
    head = cost.duration_words(est["seconds"])
    assert est["text"] == (f"{head[0].upper()}{head[1:]} on this machine (one training step takes 0.12 s here; "
                           "24 fine-tunes: 4 arms x 2 sizes x 3 seeds, the trained ones 2 at a time).")
    assert head in ("about a minute", f"about {round(minutes)} minutes", "under a minute")
    with_rule = cost.estimate(shape, ARMS, [8], 1, 0.12, 3.0, zero_label=True)
    assert "6 fine-tunes: 5 arms x 1 size x 1 seed + the readout with no labels" in with_rule["text"]
    assert "left out" in cost.estimate(shape, ARMS[1:], [8, "all"], 1, 0.1, 3.0, trained_up_to=8)["text"]


@pytest.mark.parametrize("seconds, words, left", [
    (10, "under a minute", "less than a minute left"), (60, "about a minute", "about a minute left"),
    (100, "about 2 minutes", "about 2 minutes left"), (185, "about 3 minutes", "about 3 minutes left"),
    (3600, "about 60 minutes", "about 60 minutes left")])
def test_minutes_in_words(seconds, words, left):
    assert cost.duration_words(seconds) == words and cost.left_words(seconds) == left
    assert math.isfinite(seconds)


@pytest.mark.parametrize("lines", [20, 30])
def test_the_hand_offs_grid_is_sized_for_about_two_minutes_on_a_two_core_laptop(lines):
    """docs/finetune.md: a class's 20-30 labelled lines of about 35 characters, one step 0.092 s (measured on the
    2-core EPYC), a trainer's start 3.5 s: the hand-off's grid (the readout skipped: nothing chosen) ends in
    about 2 minutes or less; 5 seeds instead of 3 would not, at 30 lines."""
    shape = cost.Shape(lines_task(lines, length=35), 128)
    arms = [a for a in cost.HANDOFF["arms"] if a != "readout"]
    sizes = [s for s in cost.HANDOFF["sizes"] if s == "all" or s < shape.n_train]
    est = cost.estimate(shape, arms, sizes, cost.HANDOFF["seeds"], 0.092, 3.5, workers=2, cores=2, gpt_way=True)
    # the cost model's arithmetic on the fixed step above (not a measured time): its words say 45 to 150 s
    assert re.match(r"About (a minute|2 minutes) on this machine", est["text"]), est["text"]
    more = cost.estimate(shape, arms, sizes, 5, 0.092, 3.5, workers=2, cores=2, gpt_way=True)
    assert more["seconds"] > est["seconds"] * 1.4
