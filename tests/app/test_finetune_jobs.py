"""The fine-tune job runner as a state machine: a stand-in trainer (a few lines of Python printing
the protocol of `python -m training finetune`) drives it through start, results, a classifier,
the summary, failure, cancelling and a restart. The real trainer runs in
tests/app/test_finetunes_api.py; this file checks the runner's own rules."""
from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
import time
from pathlib import Path

import pytest

from app.config import Settings
from app.errors import ApiError
from app.finetunes.jobs import FinetuneManager
from app.registry import Registry
from app.runs import RunManager
from app.runtime import Runtime

from test_classifier_serving import SHIPPED_MODELS, make_set  # noqa: E402 (tests/app is on sys.path)

FAKE = textwrap.dedent('''
    import json, os, shutil, sys, time
    out, mode, classifier = sys.argv[1], sys.argv[2], sys.argv[3]
    def say(**e): print(json.dumps(e), flush=True)
    say(event="start", task="toy", kind="sequence", labels=["a", "b"], arms=["full"], sizes=[8], seeds=2,
        n_train=20, n_test=10, jobs=2)
    say(event="result", arm="full", size=8, seed=0, accuracy=0.6, n_test=10, seconds=0.1)
    if mode == "slow":
        time.sleep(60)
    if mode == "cancelled":  # cancelled the instant its first result is written (as a cancel does it)
        open(os.path.join(os.path.dirname(out), "cancel-requested"), "w").close()
        os.kill(os.getpid(), 15)
    if mode == "crash":
        print("Traceback: something broke", file=sys.stderr, flush=True)
        sys.exit(3)
    if mode == "error":
        say(event="error", message="task toy: too few examples")
        sys.exit(2)
    say(event="result", arm="full", size=8, seed=1, accuracy=0.8, n_test=10, seconds=0.1)
    shutil.copytree(classifier, os.path.join(out, "classifiers", "full"))
    say(event="classifier", arm="full", dir="classifiers/full", accuracy=0.8)
    say(event="summary", results={"full": {"8": {"mean": 0.7, "lo": 0.0, "hi": 1.0, "n": 2}}}, difference={})
''')


class Fake(FinetuneManager):
    mode = "ok"

    def command(self, job):
        script = self.data_dir / "fake_trainer.py"
        script.write_text(FAKE, encoding="utf-8")
        return [sys.executable, str(script), str(self.jobs_dir / job["id"] / "out"), self.mode,
                str(self.data_dir / "classifier")]


@pytest.fixture
def managers(tmp_path):
    settings = Settings(models_dir=SHIPPED_MODELS, data_dir=tmp_path / "data", run_threads=1)
    registry = Registry(Runtime())
    registry.add(SHIPPED_MODELS, pin=True, default=True)
    runs = RunManager(settings, registry)
    ft = Fake(settings, registry, runs)
    runs.slot_users.append(ft.active_label)
    make_set(settings.data_dir / "classifier")
    return runs, ft, registry


SETTINGS = {"model": "shakespeare", "model_name": "Shakespeare", "model_dir": str(SHIPPED_MODELS), "task": "toy",
            "task_label": "toy", "arms": ["full"], "sizes": [8], "seeds": 2, "steps": None, "snapshots": False,
            "run": None, "run_dir": None}


def wait(ft, job_id, statuses, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = ft.get(job_id)
        if job["status"] in statuses:
            return ft.detail(job_id)
        time.sleep(0.05)
    raise AssertionError(ft.get(job_id))


def printed(ft, job_id, text, timeout=60):
    """Wait until the trainer has written a complete line holding `text` to the job's event file."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if any(text in line for line in ft.events_path(job_id).read_text().splitlines(keepends=True)
                   if line.endswith("\n")):
                return
        except OSError:
            pass
        time.sleep(0.01)
    raise AssertionError(ft.get(job_id))


def test_a_job_runs_to_its_summary_and_its_classifier_is_served(managers):
    runs, ft, registry = managers
    job = ft.start(SETTINGS, None)
    assert job["status"] == "queued"
    done = wait(ft, job["id"], ("finished", "failed"))
    assert done["status"] == "finished" and done["exit_code"] == 0, done
    assert done["done"] == 2 and done["total"] == 2 and done["summary"]["full"]["8"]["mean"] == 0.7
    assert done["so_far"]["full"]["8"]["mean"] == pytest.approx(0.7)
    model = f"{job['id']}.full"
    assert done["classifiers"] == [{"arm": "full", "dir": "classifiers/full", "accuracy": 0.8, "model": model}]
    assert registry.classifier(model).classify("hi")["kind"] == "sequence"
    lines = [json.loads(x) for x in ft.events_path(job["id"]).read_text().splitlines()]
    assert [e["event"] for e in lines] == ["start", "result", "result", "classifier", "summary"]
    # deleting drops the classifier from the registry
    assert ft.cancel_or_delete(job["id"])["status"] == "deleted"
    assert model not in registry.ids() and ft.list() == []


def test_the_training_slot_is_shared_with_runs(managers):
    runs, ft, _ = managers
    ft.mode = "slow"
    job = ft.start(SETTINGS, None)
    wait(ft, job["id"], ("running",))
    with pytest.raises(ApiError) as err:
        ft.start(SETTINGS, None)
    assert err.value.status == 409 and job["id"] in err.value.detail
    with pytest.raises(ApiError) as err:  # a pretraining run is refused while a fine-tune trains
        runs.start(None, None, ["gpt"], 1.0, None, 1)
    assert err.value.status == 409 and job["id"] in err.value.detail and "fine-tune" in err.value.detail
    # "running" means its trainer was started, not that it has printed anything: on a loaded machine
    # a cancel sent now stops it before its first result. Cancel the moment that line is in the file
    # (read raw, so nothing is folded before the cancel).
    printed(ft, job["id"], '"result"')
    assert ft.cancel_or_delete(job["id"])["status"] == "cancelling"
    done = wait(ft, job["id"], ("cancelled", "failed"))
    assert done["status"] == "cancelled" and done["done"] == 1  # what finished stays
    fd = runs._try_lock()  # the slot is free again
    assert fd is not None
    os.close(fd)


def test_a_result_written_the_instant_before_a_cancel_stays(managers):
    _, ft, _ = managers
    ft.mode = "cancelled"
    job = ft.start(SETTINGS, None)
    done = wait(ft, job["id"], ("cancelled", "failed", "finished"))
    assert done["status"] == "cancelled" and done["exit_code"] == -15
    assert done["done"] == 1 and done["results"][0]["accuracy"] == 0.6


@pytest.mark.parametrize("mode, says", [("crash", "exited with status 3: Traceback: something broke"),
                                        ("error", "task toy: too few examples")])
def test_a_failed_trainer_says_why(managers, mode, says):
    _, ft, _ = managers
    ft.mode = mode
    job = ft.start(SETTINGS, None)
    done = wait(ft, job["id"], ("finished", "failed"))
    assert done["status"] == "failed" and says in done["reason"] and done["done"] == 1


def test_a_restart_marks_a_job_cut_short_and_keeps_its_classifiers(managers, tmp_path):
    runs, ft, registry = managers
    job = ft.start(SETTINGS, None)
    wait(ft, job["id"], ("finished",))
    # as if the server and its trainer had died mid-way: job.json still says running, the trainer
    # never said its summary, nobody holds the slot or the trainer's lock
    events = ft.events_path(job["id"])
    events.write_text("".join(line + "\n" for line in events.read_text().splitlines() if '"summary"' not in line))
    ft._update(job["id"], status="running")
    fresh = Fake(ft.settings, Registry(Runtime()), runs)
    fresh.startup()
    after = fresh.detail(job["id"])
    assert after["status"] == "interrupted" and "no server watched it" in after["reason"]
    assert f"{job['id']}.full" in fresh.registry.ids()
