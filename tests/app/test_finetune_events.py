"""The fine-tune job's state folded from the trainer's JSON lines, the interval on fixed numbers,
and the uploaded task file's checks (each names its line and field)."""
from __future__ import annotations

import json

import pytest

from app.errors import ApiError
from app.finetunes import events as ev
from app.finetunes import task_file


def test_interval_on_fixed_numbers():
    out = ev.interval([0.5, 0.6, 0.7])
    # mean 0.6, sd 0.1, t(2) = 4.303: half-width 0.303 * 0.1 / sqrt(3)
    assert out["mean"] == pytest.approx(0.6) and out["n"] == 3
    assert out["hi"] - out["mean"] == pytest.approx(4.303 * 0.1 / 3 ** 0.5)
    assert out["mean"] - out["lo"] == pytest.approx(out["hi"] - out["mean"])
    assert ev.interval([0.8]) == {"mean": 0.8, "lo": None, "hi": None, "n": 1}
    many = ev.interval([0.0, 1.0] * 20)  # 40 values: beyond the table, the normal's 1.96
    assert many["hi"] - many["mean"] == pytest.approx(1.96 * (40 / 39 * 0.25) ** 0.5 / 40 ** 0.5)


LINES = [
    {"event": "start", "task": "sentiment", "kind": "sequence", "labels": ["negative", "positive"],
     "arms": ["full", "scratch"], "sizes": [8, "all"], "seeds": 2, "n_train": 200, "n_test": 100, "jobs": 8},
    {"event": "result", "arm": "full", "size": 8, "seed": 0, "accuracy": 0.7, "n_test": 100, "seconds": 1.0},
    {"event": "result", "arm": "full", "size": 8, "seed": 1, "accuracy": 0.8, "n_test": 100, "seconds": 1.0},
    {"event": "result", "arm": "scratch", "size": 8, "seed": 0, "accuracy": 0.5, "n_test": 100, "seconds": 1.0},
    {"event": "mystery", "anything": 1},
    {"event": "result", "arm": "scratch", "size": "all", "seed": 0, "accuracy": 0.6, "n_test": 100, "seconds": 1.0},
    {"event": "classifier", "arm": "full", "dir": "classifiers/full", "accuracy": 0.81},
]


def test_fold_counts_results_and_summarises_them_so_far():
    state = ev.fold(LINES)
    assert state["start"]["labels"] == ["negative", "positive"] and state["total"] == 8 and state["done"] == 4
    assert state["by"] == "size" and state["summary"] is None
    assert state["so_far"]["full"]["8"]["mean"] == pytest.approx(0.75) and state["so_far"]["full"]["8"]["n"] == 2
    assert state["so_far"]["scratch"]["all"] == {"mean": 0.6, "lo": None, "hi": None, "n": 1}
    assert state["classifiers"] == [{"arm": "full", "dir": "classifiers/full", "accuracy": 0.81}]


def test_fold_takes_the_trainers_summary_and_error():
    summary = {"event": "summary", "results": {"full": {"8": {"mean": 0.75, "lo": 0.1, "hi": 1.0, "n": 2}}},
               "difference": {"full-scratch": {"8": {"mean": 0.25}}}, "gpt_way": {"accuracy": 0.52}}
    state = ev.fold([*LINES, summary])
    assert state["summary"] == summary["results"] and state["difference"] == summary["difference"]
    assert state["gpt_way"] == {"accuracy": 0.52}
    assert ev.fold([*LINES, {"event": "error", "message": "boom"}])["error"] == "boom"


def test_fold_by_pretraining_step_from_snapshots():
    lines = [{"event": "result", "arm": "full", "size": 32, "seed": s, "step": step, "accuracy": a}
             for s, (step, a) in enumerate([(0, 0.5), (100, 0.6), (100, 0.7)])]
    state = ev.fold(lines)
    assert state["by"] == "step" and set(state["so_far"]["full"]) == {"0", "100"}
    assert state["so_far"]["full"]["100"]["mean"] == pytest.approx(0.65)


def jsonl(rows) -> str:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n"


GOOD = [{"text": f"sentence {i}", "label": "positive" if i % 2 else "negative"} for i in range(12)]


def test_a_good_task_file_parses():
    out = task_file.parse(jsonl(GOOD + [{"text": "held out", "label": "positive", "split": "test"}, ""]), 100_000)
    assert out == {"kind": "sequence", "labels": ["negative", "positive"], "examples": 13,
                   "splits": {"train": 0, "test": 1, "unsplit": 12}}
    tags = [{"text": "Hello you", "tags": "100000000"}] * 10 + [{"text": "ok", "tags": "00"}]
    assert task_file.parse(jsonl(tags), 100_000)["labels"] == ["0", "1"]


@pytest.mark.parametrize("name", ["spelling", "backwards", "capitals", "plays", "sentiment"])
def test_the_server_accepts_every_shipped_task_file_the_trainer_runs(name):
    """One parser (app/contract/task_format.py) for both: the shipped files carry "source" fields."""
    from training.finetune.tasks import TASKS_DIR, load_task

    text = (TASKS_DIR / f"{name}.jsonl").read_text(encoding="utf-8")
    out = task_file.parse(text, 10_000_000)
    task = load_task(name)
    assert out["kind"] == task.kind and out["labels"] == task.labels
    assert out["examples"] == len(task.train) + len(task.test)


def test_the_text_limit_is_the_trainers():
    from app.contract.task_format import MAX_TEXT_CHARS

    long = GOOD + [{"text": "x" * MAX_TEXT_CHARS, "label": "positive"}]
    assert task_file.parse(jsonl(long), 10_000_000)["examples"] == 13
    with pytest.raises(task_file.TaskFileError) as err:
        task_file.parse(jsonl(GOOD + [{"text": "x" * (MAX_TEXT_CHARS + 1), "label": "positive"}]), 10_000_000)
    assert err.value.line == 13 and f"at most {MAX_TEXT_CHARS}" in err.value.detail


@pytest.mark.parametrize("rows, line, says", [
    (GOOD[:3] + ["{not json"] + GOOD, 4, "not valid JSON"),
    (GOOD[:1] + [[1, 2]] + GOOD, 2, "JSON object"),
    (GOOD[:2] + [{"label": "positive"}] + GOOD, 3, "field 'text' missing"),
    (GOOD[:2] + [{"text": "  ", "label": "positive"}] + GOOD, 3, "field 'text' is empty"),
    (GOOD[:2] + [{"text": "x"}] + GOOD, 3, "field 'label' missing"),
    (GOOD[:2] + [{"text": "x", "label": ""}] + GOOD, 3, "field 'label' must be a non-empty"),
    ([{"text": "ab", "tags": "01"}] * 2 + [{"text": "abc", "tags": "01"}], 3, "has 2 tag characters but text has 3"),
    (GOOD[:2] + [{"text": "ab", "tags": "01"}], 3, "one kind of task"),
    (GOOD[:2] + [{"text": "x", "label": "a", "split": "dev"}] + GOOD, 3, "field 'split'"),
    (GOOD[:2] + [{"text": "x", "label": "a", "extra": 1}] + GOOD, 3, "field 'extra' unknown field"),
    ([{"text": f"t{i}", "label": f"L{i}"} for i in range(25)], None, "at most 20"),
    ([{"text": f"t{i}", "label": "only"} for i in range(12)], None, "only one label"),
    ([r | {"split": "train"} for r in GOOD[:3]] + [r | {"split": "test"} for r in GOOD[3:5]], None, "at least 4"),
    ([r | {"split": "train"} for r in GOOD] + [{"text": "t", "label": "positive", "split": "test"}], None,
     "no test (held-out) example of the label 'negative'"),
])
def test_bad_task_files_name_the_line_and_field(rows, line, says):
    with pytest.raises(task_file.TaskFileError) as err:
        task_file.parse(jsonl(rows), 100_000)
    assert err.value.parameter == "task_text" and says in err.value.detail
    assert err.value.line == line and (line is None or f"line {line}:" in err.value.detail)


def test_an_oversized_task_file_is_413():
    with pytest.raises(ApiError) as err:
        task_file.parse(jsonl(GOOD) * 100, 1000)
    assert err.value.status == 413 and err.value.parameter == "task_text"


def test_a_snapshot_summary_is_by_pretraining_step():
    by_step = [{"model": "step-000000", "step": 0, "mean": 0.5, "lo": 0.4, "hi": 0.6, "n": 3},
               {"model": "final", "step": 392, "mean": 0.7, "lo": 0.6, "hi": 0.8, "n": 3}]
    state = ev.fold([{"event": "result", "arm": "full", "size": 32, "seed": 0, "step": 0, "accuracy": 0.5},
                     {"event": "summary", "results": {"full": {"32": {"mean": 0.6, "lo": 0.5, "hi": 0.7, "n": 6}}},
                      "by_step": by_step}])
    assert state["by"] == "step"
    assert state["summary"] == {"full": {"0": {"mean": 0.5, "lo": 0.4, "hi": 0.6, "n": 3},
                                         "392": {"mean": 0.7, "lo": 0.6, "hi": 0.8, "n": 3}}}


def test_the_task_list_is_read_from_the_task_files_as_the_trainer_lists_them():
    """GET /api/tasks starts no process: the app reads training/tasks/ (tasks.json and each file)."""
    from app.finetunes.tasks import shipped_tasks
    from training.finetune.tasks import list_tasks

    tasks = shipped_tasks()
    assert tasks == list_tasks() and [t["name"] for t in tasks][:3] == ["spelling", "backwards", "capitals"]
    assert all(t["n_train"] > 0 and t["n_test"] > 0 and t["description"] for t in tasks)


def test_the_event_log_folds_each_complete_line_once_as_the_file_grows(tmp_path):
    """One fold per job and worker (app/jobs/eventlog.py): each look reads only what was appended,
    a half-written line waits for its end, and every viewer sees the same folded state."""
    from app.jobs.eventlog import EventLog

    path = tmp_path / "events.jsonl"
    path.write_text('{"event": "start", "jobs": 2}\n{"event": "result", "arm": "full", "si')
    log = EventLog(path, ev.new_state(), ev.fold_one)
    assert [e["event"] for e in log.new()] == ["start"] and log.new() == []
    with open(path, "a") as f:
        f.write('ze": 8, "seed": 0, "accuracy": 0.5}\nnot json\n{"event": "result", "arm": "full", "size": 8, '
                '"seed": 1, "accuracy": 0.7}\n')
    shown = log.folded(ev.finish)
    assert shown["done"] == shown["total"] == 2 and shown["so_far"]["full"]["8"]["mean"] == pytest.approx(0.6)
    assert log.counts["result"] == 2 and log.new() == [] and log.folded()["done"] == 2


def test_the_final_state_keeps_the_interval_method_the_readout_and_the_choices():
    state = ev.new_state()
    ev.fold_one(state, {"event": "summary", "results": {}, "interval": "Student's t over 5 seeds, 95 %",
                        "readout": {"zero_label": {"mean": 0.7}}, "choices": {"full": {"lr": 1e-4}}, "device": "cpu",
                        "unknown": 1})
    final = state["final"]
    assert final["interval"].startswith("Student's t") and final["readout"]["zero_label"]["mean"] == 0.7
    assert final["choices"]["full"]["lr"] == 1e-4 and final["device"] == "cpu" and "unknown" not in final
