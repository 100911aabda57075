"""The fine-tune lab says how long it will take (issue 42 must 3): `--time-step` prints one JSON line
with a training step's CPU seconds here; every fine-tune times a step at its start and puts the
estimate into its start line; each result line carries the time left, the estimate scaled by what
the finished jobs took (training/finetune/progress.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from app.contract import finetune_cost as cost
from app.contract.task_format import parse_task
from training.finetune.loop import TaskData
from training.finetune.progress import RISE_SECONDS, RISE_SHARE, Progress
from training.inspect_export import model_from_onnx
from training.tokenizer import CharTokenizer

REPO = Path(__file__).resolve().parents[2]
THEMES = {"crown": "the king and the crown", "sea": "a ship upon the sea"}


def write_task(path: Path) -> Path:
    rows = [{"text": f"Line {j} speaks of {theme}, again!", "label": label, "split": "test" if j % 4 == 3 else "train"}
            for label, theme in THEMES.items() for j in range(8)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def finetune(args: list[str]) -> list[dict]:
    proc = subprocess.run([sys.executable, "-m", "training", "finetune", *args], capture_output=True, text=True,
                          cwd=REPO, env=os.environ | {"PYTHONPATH": str(REPO)}, timeout=600)
    assert proc.returncode == 0, (proc.stdout[-1000:], proc.stderr[-2000:])
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.mark.slow
def test_time_step_prints_one_json_line(tiny_models_dir, tmp_path):
    task = write_task(tmp_path / "themes.jsonl")
    [line] = finetune(["--model", str(tiny_models_dir), "--task", str(task), "--time-step"])
    assert line["event"] == "step_time" and line["batch"] == 16 and line["threads"] == 1 and line["device"] == "cpu"
    assert line["step_seconds"] > 0 and line["small_step_seconds"] > 0 and line["start_seconds"] > 0
    lengths = [len(e.text) for e in parse_task(task.read_bytes(), "t").train]
    assert line["padded_length"] == pytest.approx(cost.padded_length(lengths, line["context"]), abs=0.01)
    assert line["task"] == "themes" and line["context"] == 64


@pytest.mark.slow
def test_the_start_line_estimates_and_each_result_says_the_time_left(tiny_models_dir, tmp_path):
    task = write_task(tmp_path / "themes.jsonl")
    events = finetune(["--model", str(tiny_models_dir), "--task", str(task), "--arms", "full,probe,ngram",
                       "--sizes", "4", "--seeds", "1", "--steps", "3", "--no-export", "--no-gpt"])
    start, *results, summary = events
    est = start["estimate"]
    assert est["jobs"] == start["jobs"] == len(results) == 3 and est["workers"] == 1  # one trained job: one worker
    assert est["seconds"] > est["start_seconds"] > 0 and est["step_seconds"] > 0 and est["padded_length"] > 2
    assert f"one training step takes {est['step_seconds']:.2g} s here" in est["text"]
    assert "3 fine-tunes: 3 arms x 1 size x 1 seed" in est["text"]
    # (the tiny models' jobs cost milliseconds: rounded to 0.1 s, what is left at the start may read 0.0)
    assert 0 <= est["time_left"]["seconds"] <= est["seconds"] and est["time_left"]["text"].endswith(" left")
    assert [r["arm"] for r in results] == ["ngram", "probe", "full"]
    for r in results:
        left = r["time_left"]
        assert left["seconds"] >= 0 and left["text"] == cost.left_words(left["seconds"]) and left["scale"] > 0
    assert results[-1]["time_left"]["seconds"] == 0  # nothing left: no export, no GPT's way
    assert summary["time"]["estimated_seconds"] == est["seconds"] and summary["time"]["seconds"] > 0


def test_the_validation_slice_the_cost_model_counts_is_the_trainers(tmp_path):
    task = parse_task(write_task(tmp_path / "t.jsonl").read_bytes(), "t")
    data = TaskData(task, {c: i for i, c in enumerate(sorted({c for e in task.train for c in e.text}))}, 64)
    shape = cost.Shape(task, 64)
    for n in (4, 5, 8, 11):
        fit, val = data.split(data.choose(n, 0), 0, 0.25)
        assert (len(fit), len(val)) == cost.split_sizes(shape, n)


def test_timing_a_step_leaves_the_random_streams_as_they_were(tiny_models_dir, tmp_path):
    from training.finetune.step_time import measure

    bert = model_from_onnx(tiny_models_dir, "bert")[0]
    task = parse_task(write_task(tmp_path / "t.jsonl").read_bytes(), "t")
    data = TaskData(task, CharTokenizer.load(tiny_models_dir / "vocab.json").stoi, bert.cfg.context)
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    timing = measure(bert, data)
    assert torch.equal(torch.rand(3), expected)
    assert timing["step_seconds"] > 0 and timing["padded_length"] == pytest.approx(
        cost.padded_length([len(e.text) for e in task.train], 64), abs=0.01)


def made_up(workers: int = 2) -> tuple[list[tuple], Progress]:
    jobs = [("ngram", 8, 0), ("full", 8, 0), ("scratch", 8, 0), ("full", 8, 1), ("scratch", 8, 1)]
    return jobs, Progress(jobs, [10, 100, 100, 100, 100], 0.1, workers=workers, cores=2, exports=0, gpt_texts=0,
                          start_seconds=2.0, now=0.0)


def test_time_left_is_the_estimate_scaled_by_what_the_finished_jobs_took():
    jobs, p = made_up(workers=1)
    assert p.left(0.0)["seconds"] == pytest.approx(41.0)  # 410 steps of 0.1 s, nothing started again
    p.finished({"arm": "ngram", "size": 8, "seed": 0, "seconds": 5.0, "cpu_seconds": 1.0}, 1.0)
    assert p.scale() == pytest.approx(1.0)  # a cheap job counts its CPU: as predicted
    p.finished({"arm": "full", "size": 8, "seed": 0, "seconds": 30.0, "cpu_seconds": 30.0}, 31.0)
    r = (1.0 + 30.0 + 0.2 * 41.0) / (1.0 + 10.0 + 0.2 * 41.0)  # twice as slow as predicted, a fifth of the grid as prior
    assert p.scale() == pytest.approx(r)
    left = p.left(31.0)
    assert left["raw_seconds"] == round(30.0 * r, 1) and left["scale"] == round(r, 3)
    # shown: at most the noise of one step above the figure shown before (41 s)
    assert left["seconds"] == pytest.approx(41.0 + RISE_SECONDS) and left["text"] == cost.left_words(46.0)
    for arm, seed in (("scratch", 0), ("full", 1), ("scratch", 1)):
        p.finished({"arm": arm, "size": 8, "seed": seed, "seconds": 10.0, "cpu_seconds": 10.0}, 60.0)
    assert p.left(60.0)["seconds"] == 0 and p.left(60.0)["text"] == "less than a minute left"


def test_the_workers_jobs_in_hand_count_what_they_have_done_since_the_last_came_back():
    jobs, p = made_up(workers=2)
    p.finished({"arm": "ngram", "size": 8, "seed": 0, "seconds": 1.0, "cpu_seconds": 1.0}, 1.0)
    assert p.left(0.0)["seconds"] == pytest.approx(20.0)  # 400 steps of 0.1 s on two workers
    assert p.left(1.0)["seconds"] == pytest.approx(20.0 - 1.0)  # each of the two jobs in hand (the first two
    assert p.left(6.0)["seconds"] == pytest.approx(20.0 - 6.0)  # trained ones) has had the time since the start
    p.finished({"arm": "full", "size": 8, "seed": 0, "seconds": 8.0, "cpu_seconds": 8.0}, 8.0)
    r = p.scale()
    # scratch 0 has had 8 s, full 1 was taken at 8 s; scratch 1 waits
    in_hand = [max(0.0, 10 * r - 8.0), 10 * r, 10 * r]
    assert p.left(8.0)["seconds"] == pytest.approx(max(sum(in_hand) / 2, max(in_hand)), abs=0.05)


def test_the_time_left_never_climbs_back_by_more_than_a_steps_noise_and_falls_as_it_falls():
    """A machine that turns busy halfway (issue 52 must 4): every job after the first takes three times its
    prediction. The raw figure jumps up; the one shown rises by at most the noise at each report."""
    jobs = [("full", 8, s) for s in range(12)]
    p = Progress(jobs, [100] * 12, 0.1, workers=1, cores=2, exports=0, gpt_texts=0, start_seconds=0.0, now=0.0)
    now, last, rises, raw_rises = 0.0, p.left(0.0)["seconds"], [], []
    last_raw = last
    for i, job in enumerate(jobs):
        took = 10.0 if i == 0 else 30.0
        now += took
        p.finished({"arm": "full", "size": 8, "seed": job[2], "seconds": took, "cpu_seconds": took}, now)
        left = p.left(now)
        rises.append(left["seconds"] - last)
        raw_rises.append(left["raw_seconds"] - last_raw)
        assert left["seconds"] <= left["raw_seconds"] + 1e-9
        last, last_raw = left["seconds"], left["raw_seconds"]
    assert max(raw_rises) > 3 * RISE_SECONDS  # the raw figure does climb back: the case is a real one
    assert all(r <= max(RISE_SECONDS, RISE_SHARE * 140.0) + 0.1 for r in rises)
    assert max(rises) > 0  # and the slowdown still shows, a little at a time
    assert last == 0.0
