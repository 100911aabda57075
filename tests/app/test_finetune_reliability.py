"""Issue 24: a fine-tune's state is always true, as a training run's is (one lifecycle,
app/jobs/). With the stand-in trainer of test_finetune_jobs.py:

- the server killed -9 while its fine-tune trains: the restarted server sees the trainer alive
  by its lock (job still running, the slot still taken: no second job beside it), cancels it by
  the proven PID, and the job settles as cancelled;
- a PID written into job.json (an unrelated process) is never signalled;
- a trainer that died while no server watched it settles at once (no "cancelling" forever);
- a full disk: the job ends failed with the reason, even though job.json cannot be written."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.errors import ApiError
from app.registry import Registry
from app.runs import RunManager
from app.jobs.liveness import trainer_alive, trainer_pid
from app.jobs.store import DISK_FULL
from app.runtime import Runtime

from test_finetune_jobs import SETTINGS, SHIPPED_MODELS, Fake, make_set  # noqa: E402 (tests/app is on sys.path)

HERE = Path(__file__).resolve().parent
OLD_SERVER = """
import json, sys, time
sys.path[:0] = [sys.argv[2], sys.argv[3]]
from app.config import Settings
from app.registry import Registry
from app.runs import RunManager
from app.runtime import Runtime
from test_finetune_jobs import SETTINGS, SHIPPED_MODELS, Fake
settings = Settings(models_dir=SHIPPED_MODELS, data_dir=sys.argv[1], run_threads=1)
runs = RunManager(settings, None)
ft = Fake(settings, None, runs)
ft.mode = "slow"
job = ft.start(SETTINGS, None)
while ft.get(job["id"])["status"] != "running":
    time.sleep(0.05)
print(json.dumps(ft.get(job["id"])), flush=True)
time.sleep(600)
"""


def managers(data: Path, mode: str = "ok"):
    from app.config import Settings

    settings = Settings(models_dir=SHIPPED_MODELS, data_dir=data, run_threads=1)
    registry = Registry(Runtime())
    registry.add(SHIPPED_MODELS, pin=True, default=True)
    runs = RunManager(settings, registry)
    ft = Fake(settings, registry, runs)
    ft.mode = mode
    runs.slot_users.append(ft.active_label)
    return runs, ft


def settle_until(ft, job_id, statuses, timeout=30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ft.scan()
        job = ft.get(job_id)
        if job["status"] in statuses:
            return job
        time.sleep(0.1)
    raise AssertionError(ft.get(job_id))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"


@pytest.mark.slow
def test_a_server_killed_mid_fine_tune_restarts_with_the_truth_and_cancels_the_right_process(tmp_path):
    data = tmp_path / "data"
    make_set(data / "classifier")
    old = subprocess.Popen([sys.executable, "-c", OLD_SERVER, str(data), str(HERE), str(HERE.parents[1])],
                           stdout=subprocess.PIPE, text=True)
    try:
        job = json.loads(old.stdout.readline())
    finally:
        old.kill()  # kill -9: no watcher, no clean-up; its trainer lives on
        old.wait()
    job_id, job_dir = job["id"], data / "finetunes" / job["id"]
    trainer = trainer_pid(job_dir)
    assert trainer == job["pid"] and alive(trainer)
    runs, ft = managers(data)
    ft.startup()
    ft.scan()
    assert ft.get(job_id)["status"] == "running" and trainer_alive(job_dir)  # the truth: it still trains
    with pytest.raises(ApiError) as err:  # never two jobs in the slot
        ft.start(SETTINGS, None)
    assert err.value.status == 409 and job_id in err.value.detail
    with pytest.raises(ApiError) as err:
        runs.start(None, None, ["gpt"], 1.0, None, 1)
    assert err.value.status == 409
    assert ft.cancel_or_delete(job_id)["status"] == "cancelling"
    done = settle_until(ft, job_id, ("cancelled", "failed", "interrupted"))
    assert done["status"] == "cancelled" and not alive(trainer)
    fd = runs._try_lock()  # the slot is free again
    assert fd is not None
    os.close(fd)
    assert ft.cancel_or_delete(job_id)["status"] == "deleted"


def test_a_pid_in_job_json_is_never_signalled(tmp_path):
    _, ft = managers(tmp_path / "data", "crash")
    make_set(ft.data_dir / "classifier")
    job = ft.start(SETTINGS, None)
    settle_until(ft, job["id"], ("failed",))
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        # as if the server had died with the job running and its PID reused by an unrelated process
        ft._update(job["id"], status="running", pid=bystander.pid)
        answer = ft.cancel_or_delete(job["id"])
        assert answer["status"] == "interrupted"  # settled from the facts at once, not "cancelling"
        time.sleep(0.5)
        assert bystander.poll() is None  # never signalled
    finally:
        bystander.kill()
        bystander.wait()


def test_a_trainer_that_died_unwatched_settles_on_the_next_scan(tmp_path):
    _, ft = managers(tmp_path / "data", "slow")
    make_set(ft.data_dir / "classifier")
    job = ft.start(SETTINGS, None)
    settle_until(ft, job["id"], ("running",))
    pid = trainer_pid(ft.folder(job["id"]))
    ft.procs.pop(job["id"])  # as if another worker had watched it and died
    os.killpg(pid, signal.SIGKILL)
    done = settle_until(ft, job["id"], ("failed", "interrupted"))
    assert done["status"] in ("failed", "interrupted") and done["reason"]


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_settles_the_job_as_failed_with_the_reason(small_disk):
    _, ft = managers(small_disk / "data", "slow")
    make_set(ft.data_dir / "classifier")
    job = ft.start(SETTINGS, None)
    settle_until(ft, job["id"], ("running",))
    with open(small_disk / "filler", "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError:
            pass
    os.killpg(trainer_pid(ft.folder(job["id"])), signal.SIGTERM)  # the trainer stops (as on ENOSPC)
    done = settle_until(ft, job["id"], ("failed", "cancelled", "interrupted"))
    assert done["status"] == "failed" and done["reason"] == DISK_FULL
    assert job["id"] in ft.unsaved  # shown from memory: job.json could not be written
    (small_disk / "filler").unlink()
    ft.scan()  # space again: what was kept in memory is stored
    assert not ft.unsaved and json.loads((ft.folder(job["id"]) / "job.json").read_text())["status"] == "failed"


def test_a_classifier_card_shows_no_server_path(tmp_path):
    from fastapi.testclient import TestClient

    from app.config import Settings
    from app.main import create_app

    data = tmp_path / "data"
    job_id = "f-20260101-000000-abcd"
    job_dir = data / "finetunes" / job_id
    make_set(job_dir / "out" / "classifiers" / "full")
    card_file = job_dir / "out" / "classifiers" / "full" / "classifier.card.json"
    card = json.loads(card_file.read_text())
    card["base_model"] = {"folder": str(SHIPPED_MODELS), "set_id": "shakespeare", "trained_in": str(data / "runs")}
    card_file.write_text(json.dumps(card))
    (job_dir / "job.json").write_text(json.dumps({"id": job_id, "status": "finished", "created": 1.0,
                                                  "settings": {**SETTINGS, "model_dir": str(SHIPPED_MODELS)}}))
    (job_dir / "events.jsonl").write_text(json.dumps({"event": "classifier", "arm": "full", "dir": "classifiers/full",
                                                      "accuracy": 0.8}) + "\n")
    app = create_app(Settings(models_dir=SHIPPED_MODELS, data_dir=data, instructor_token="x" * 12,
                              allowed_hosts=["testserver"]))
    with TestClient(app) as c:
        r = c.get(f"/api/models/{job_id}.full")
        assert r.status_code == 200, r.text
        assert r.json()["cards"]["classifier"]["base_model"] == {"folder": "models", "set_id": "shakespeare",
                                                                 "trained_in": "data/runs"}
        for path in ("/api/finetunes", f"/api/finetunes/{job_id}"):
            text = c.get(path).text
            assert str(SHIPPED_MODELS) not in text and str(data) not in text and '"pid"' not in text
