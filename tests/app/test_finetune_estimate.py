"""The estimate before Start (issue 42 must 3): POST /api/finetune-plan takes the arms, seeds and model
a start would send and answers how long it will take here, from the model's step time measured by
the trainer (a subprocess; here a stand-in printing its line), kept in memory and in the data
folder, refreshed by each fine-tune's start line; busy, slow or failing measurements give a plan
without seconds that says why; bad input is a 4xx naming the parameter."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.contract import finetune_cost as cost
from app.contract import finetune_load
from app.contract.task_format import parse_task
from app.finetunes.step_times import FILE
from app.main import create_app

from test_finetune_plan import AUTH, TOKEN, six_lines  # noqa: E402 (tests/app is on sys.path)

TIMING = {"event": "step_time", "step_seconds": 0.1, "small_step_seconds": 0.02, "start_seconds": 3.0,
          "padded_length": 40.0, "batch": 16, "threads": 1, "device": "cpu", "context": 64}


def stand_in(timing: dict | None = TIMING, sleep: float = 0.0, error: str | None = None):
    """A measuring command that prints the trainer's line (after `sleep` seconds), or an error line."""
    line = {"event": "error", "message": error} if error else timing
    code = f"import json, time; time.sleep({sleep}); print(json.dumps({line!r}))"
    return lambda folder, task: [sys.executable, "-c", code]


@pytest.fixture()
def client(tiny_models_dir, tmp_path, monkeypatch):
    # an idle machine whatever this one is doing: the load is counted (finetune_load), the test asks for none
    monkeypatch.setattr(finetune_load, "machine", lambda: ([[]], os.cpu_count() or 1, "run queue"))
    settings = Settings(models_dir=tiny_models_dir, data_dir=tmp_path / "data", instructor_token=TOKEN, run_threads=1)
    with TestClient(create_app(settings)) as c:
        times = c.app.state.finetunes.step_times
        times.command, times.wait_s = stand_in(), 10.0
        yield c


def ask(client, **body) -> dict:
    r = client.post("/api/finetune-plan", json={"task_text": six_lines(), "sizes": [8, 32, 128, "all"]} | body,
                    headers=AUTH)
    assert r.status_code == 200, r.json()
    return r.json()


def test_the_plan_says_how_long_the_start_would_take_here(client, tmp_path):
    model = client.get("/api/models").json()["default"]
    p = ask(client, model=model, arms=["readout", "full", "probe", "scratch", "ngram"], seeds=3)
    assert p["arms"] == ["full", "probe", "scratch", "ngram"]  # a class's file declares no readout
    assert p["skipped_arms"][0]["arm"] == "readout" and "declares no readout" in p["skipped_arms"][0]["why"]
    est = p["estimate"]
    shape = cost.Shape(parse_task(six_lines(), "uploaded"), 64)
    step = 0.1 * shape.padded / 40.0  # the measured step, carried to this task's texts
    assert est["step_seconds"] == pytest.approx(step) and est["why"] is None
    cores = os.cpu_count() or 1
    assert est["jobs"] == 4 * 1 * 3 and est["workers"] == min(2, cores)  # sizes: 'all' only (4 training lines)
    expected = cost.estimate(shape, p["arms"], ["all"], 3, step, 3.0, workers=min(2, cores), cores=cores, small=0.2,
                             export=True, gpt_way=True,  # three classifiers exported, GPT's way answers (as the server runs it)
                             busy=finetune_load.load(min(2, cores), Settings.model_fields["run_nice"].default))
    assert est["seconds"] == pytest.approx(expected["seconds"], abs=0.1) and est["text"] == expected["text"]
    assert f"one training step takes {step:.2g} s here; 12 fine-tunes: 4 arms x 1 size x 3 seeds" in est["text"]
    kept = json.loads((tmp_path / "data" / FILE).read_text())  # kept in the data folder, keyed by the set
    [(key, entry)] = kept.items()
    assert key.startswith(model + ":") and entry["step_seconds"] == 0.1 and entry["source"] == "measured"
    client.app.state.finetunes.step_times.command = stand_in(error="must not be asked again")
    assert ask(client, model=model)["estimate"]["step_seconds"] == pytest.approx(step)  # measured once per set


def test_a_busy_machine_stretches_the_estimate_and_the_words_say_so(client, monkeypatch):
    """Issue 52 must 4: the same start beside two busy processes on two cores takes about twice as long, the
    trainer niced at the server's run_nice (10) far longer still; the words show the load."""
    idle = ask(client, seeds=3)["estimate"]
    assert idle["load"]["factor"] == 1.0 and "as good as idle" in idle["text"]
    monkeypatch.setattr(finetune_load, "machine", lambda: ([[1.0, 1.0]], 2, "run queue"))  # two busy nice-0 threads
    busy = ask(client, seeds=3)["estimate"]
    nice = Settings.model_fields["run_nice"].default  # the fixture's settings leave it as it is
    assert busy["load"] == finetune_load.load(min(2, os.cpu_count() or 1), nice, at=([[1.0, 1.0]], 2, "run queue"))
    assert busy["load"]["factor"] > 1.5 and busy["seconds"] > 1.5 * idle["seconds"]
    assert "the machine is busy: other work wants 2.0 of the 2 cores now" in busy["text"]


def test_the_slowdown_is_one_when_idle_and_follows_the_shares_of_the_cores():
    assert finetune_load.slowdown(0.0, 2, 2, nice=10) == 1.0  # idle: the cost model's own measured figures stand
    assert finetune_load.slowdown(2.0, 2, 2) == pytest.approx(2.0)  # 4 processes on 2 cores: half a core each
    assert finetune_load.slowdown(1.0, 4, 2) == 1.0  # spare cores: no one waits
    assert finetune_load.slowdown(2.0, 2, 2, nice=10) > 9  # a niced grid beside nice-0 work gets a tenth of a core
    # one nice-0 neighbour takes one core, no more: the niced grid's two workers share the other
    assert finetune_load.slowdown([1.0], 2, 2, nice=10) == pytest.approx(2.0)
    assert finetune_load.shares([1.0, 0.1, 0.1], 2) == pytest.approx([1.0, 0.5, 0.5])
    # a neighbour at nice 19 barely slows a nice-0 grid; the load average counted it as a whole core
    assert finetune_load.slowdown([finetune_load.weight(19)] * 2, 2, 2) < 1.05
    # two samples, one busy and one idle: the shares are averaged over the time, not the loads
    assert finetune_load.slowdown([[1.0, 1.0], []], 2, 2) == pytest.approx(1 / ((0.5 + 1.0) / 2))


def test_the_run_queue_sees_a_busy_neighbour_at_its_nice_and_leaves_ours_out():
    """The others are read from /proc now (each thread's state and nice), not from a load average that
    trails by a minute: a busy process started a moment ago is there, at its own weight."""
    if finetune_load.run_queue() is None:
        pytest.skip("no /proc here: the load average stands in")
    code = "import os; os.nice(13)\nwhile True: pass"
    hog = subprocess.Popen([sys.executable, "-c", code])
    try:
        want = finetune_load.weight(13)
        deadline, seen = time.time() + 20, False
        while time.time() < deadline and not seen:
            seen = any(w == pytest.approx(want) for w in finetune_load.run_queue() or [])
            time.sleep(0.05)
        assert seen, "a busy nice-13 process never showed in the run queue"
        for _ in range(5):  # the same process counted as ours is never among the others
            assert not any(w == pytest.approx(want) for w in finetune_load.run_queue(exclude=hog.pid)) or \
                _other_nice_13(hog.pid)
        busy = finetune_load.load(2, 0)
        assert busy["source"] == "run queue" and busy["load"] >= 0
    finally:
        hog.kill()
        hog.wait()


def _other_nice_13(pid: int) -> bool:
    """Another program of this machine busy at nice 13 (then the check above cannot tell them apart)."""
    for p in os.listdir("/proc"):
        if p.isdigit() and int(p) != pid:
            try:
                fields = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] == "R" and fields[16] == "13":
                return True
    return False


def test_more_seeds_take_longer_and_the_words_say_minutes(client):
    few, many = ask(client, seeds=1)["estimate"], ask(client, seeds=10)["estimate"]
    assert many["seconds"] > few["seconds"] and many["jobs"] == 10 * few["jobs"]
    assert any(w in many["text"] for w in ("minute", "minutes"))


def test_a_fine_tunes_start_line_replaces_the_kept_step_time(client):
    m = client.app.state.finetunes
    model = client.get("/api/models").json()["default"]
    meta = client.app.state.registry.meta(model)
    job_id = "f-20250101-000000-abcd"
    folder = m.folder(job_id)
    folder.mkdir(parents=True)
    (folder / "job.json").write_text(json.dumps({"id": job_id, "status": "running", "created": 0, "started": 0,
                                                 "ended": None, "reason": None, "pid": None, "exit_code": None,
                                                 "settings": {"model": model, "model_dir": str(meta.folder),
                                                              "task_label": "a class task"}}))
    m.on_event(job_id, {"event": "start", "estimate": TIMING | {"step_seconds": 0.5, "seconds": 100}})
    entry = m.step_times.known(model, meta.folder)
    assert entry["step_seconds"] == 0.5 and entry["source"] == f"fine-tune {job_id}"
    m.step_times.command = stand_in(error="must not be asked")
    assert ask(client)["estimate"]["step_seconds"] > 0.5 * 0.5  # from the fine-tune's measurement


def test_while_a_training_holds_the_machine_the_plan_comes_without_seconds_and_says_why(client):
    client.app.state.finetunes.step_times.busy = lambda: "fine-tune on class ABC-123 labels"
    est = ask(client)["estimate"]
    assert est["seconds"] is None and est["step_seconds"] is None and est["jobs"] == 20
    assert "holds the machine (fine-tune on class ABC-123 labels)" in est["why"] and est["measuring"] is False
    assert est["text"].startswith("How long it will take is not known yet: it is not measured while a training")


def test_a_slow_measurement_never_hangs_the_plan(client):
    times = client.app.state.finetunes.step_times
    times.command, times.wait_s = stand_in(sleep=2.0), 0.3
    est = ask(client)["estimate"]
    # no seconds yet: the plan answered before the 2 s measurement ended (it waited its 0.3 s, not for the timing)
    assert est["seconds"] is None and "still timing one training step" in est["why"]
    assert est["measuring"] is True
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and ask(client)["estimate"]["seconds"] is None:  # it goes on meanwhile
        time.sleep(0.3)
    assert ask(client)["estimate"]["seconds"] > 0


def test_a_measurement_past_its_limit_is_stopped_and_said(client):
    times = client.app.state.finetunes.step_times
    times.command, times.timeout_s = stand_in(sleep=30.0), 0.5
    est = ask(client)["estimate"]
    assert est["seconds"] is None and "measuring one training step took longer than 0.5 s" in est["why"]


def test_a_failed_measurement_says_what_the_trainer_said(client):
    client.app.state.finetunes.step_times.command = stand_in(error="--model: models has no bert.onnx")
    est = ask(client)["estimate"]
    assert est["seconds"] is None and "could not be timed here (--model: models has no bert.onnx)" in est["why"]


@pytest.mark.parametrize("body, status, parameter", [
    ({"model": "no-such-set"}, 404, "model"),
    ({"arms": ["full", "lucky"]}, 422, "arms"),
    ({"arms": []}, 422, "arms"),
    ({"seeds": 0}, 422, "seeds"),
    ({"seeds": 11}, 422, "seeds"),
    ({"steps": 0}, 422, "steps"),
    ({"readout": {"insert": " "}}, 422, "readout"),  # a per-character readout on whole lines
    ({"readout": {"colour": "red"}}, 422, "readout"),
])
def test_bad_estimate_input_names_the_field(client, body, status, parameter):
    r = client.post("/api/finetune-plan", json={"task_text": six_lines()} | body, headers=AUTH)
    assert r.status_code == status, r.json()
    assert r.json()["parameter"] == parameter, r.json()


@pytest.mark.slow
def test_the_trainer_measures_the_step_for_real(client):
    client.app.state.finetunes.step_times.command = __import__("app.finetunes.step_times", fromlist=["x"]).measure_command
    client.app.state.finetunes.step_times.wait_s = 120.0
    est = ask(client, seeds=1)["estimate"]
    # a real measurement: how long it is depends on the machine and its load, so only its being there is asserted
    assert est["seconds"] > 0 and est["step_seconds"] > 0 and "one training step takes" in est["text"]


def test_the_hand_offs_grid_is_the_servers(client):
    limits = client.get("/api/finetunes").json()["limits"]
    assert limits["handoff"] == cost.HANDOFF == {"arms": ["readout", "full", "probe", "scratch", "ngram"],
                                                 "sizes": [8, "all"], "seeds": 3}


def test_a_shipped_task_is_read_as_its_table_declares(client):
    """spaces declares its readout in the shipped table: the arm runs, with its zero-label rule first."""
    r = client.post("/api/finetune-plan", headers=AUTH, json={"task": "spaces", "sizes": [8], "seeds": 1})
    assert r.status_code == 200, r.json()
    p = r.json()
    assert p["arms"] == ["readout", "full", "probe", "scratch", "ngram"] and p["skipped_arms"] == []
    assert p["estimate"]["jobs"] == 1 + 5 and "6 fine-tunes: 5 arms x 1 size x 1 seed + the readout with no labels" \
        in p["estimate"]["text"]


def test_a_server_without_the_train_extra_times_nothing_and_says_so(client, monkeypatch):
    import app.finetunes.step_times as step_times

    monkeypatch.setattr(step_times, "training_available", lambda: False)
    client.app.state.finetunes.step_times.command = stand_in(error="must not be asked")
    est = ask(client)["estimate"]
    assert est["seconds"] is None and "cannot train" in est["why"] and est["measuring"] is False


def test_where_proc_is_missing_the_load_average_stands_in_as_nice_zero_work(monkeypatch):
    monkeypatch.setattr(finetune_load, "run_queue", lambda exclude=None: None)
    monkeypatch.setattr(finetune_load.os, "getloadavg", lambda: (1.5, 1.0, 1.0))
    monkeypatch.setattr(finetune_load.os, "cpu_count", lambda: 2)
    busy = finetune_load.load(2, 0)
    assert busy["source"] == "load average" and busy["load"] == busy["weighted"] == 1.5
    assert busy["factor"] == pytest.approx(finetune_load.slowdown(1.5, 2, 2)) and busy["factor"] > 1.5
    assert "wants 1.5 of the 2 cores over the last minute" in busy["words"] and "priority" not in busy["words"]


def test_the_run_queue_counts_running_threads_at_their_nice_and_leaves_out_kernel_workers(monkeypatch, tmp_path):
    """proc(5): state is field 3, flags field 9 (PF_KTHREAD 0x00200000), nice field 19; a name may hold spaces
    and brackets. A kernel worker at nice -20 (weight 86) runs for microseconds: never a neighbour."""
    def task(pid: int, tid: int, name: str, state: str, flags: int, nice: int) -> None:
        folder = tmp_path / str(pid) / "task" / str(tid)
        folder.mkdir(parents=True)
        rest = [state, "1", str(pid), str(pid), "0", "-1", str(flags)] + ["0"] * 9 + [str(nice)] + ["1"] * 30
        (folder / "stat").write_text(f"{tid} ({name}) " + " ".join(rest) + "\n")
    task(100, 100, "python3 (busy) x", "R", 0x400000, 0)      # a neighbour at nice 0: a whole core's worth
    task(100, 101, "python3 (busy) x", "R", 0x400040, 5)      # its second thread, at nice 5
    task(200, 200, "kworker/0:1H", "R", 0x04208060, -20)      # a kernel worker: left out
    task(300, 300, "sleeper", "S", 0x400000, 0)               # asleep: wants no core
    task(400, 400, "ours", "R", 0x400000, 0)                  # the asking process itself: counted as ours
    (tmp_path / "self").mkdir()                                # not a process
    monkeypatch.setattr(finetune_load, "PROC", tmp_path)
    assert sorted(finetune_load.run_queue(exclude=400)) == pytest.approx([finetune_load.weight(5), 1.0])
