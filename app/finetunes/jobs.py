"""Fine-tune jobs: `python -m training finetune` as a niced subprocess, its events, its classifiers.

A kind of job on the jobs kernel (app/jobs/), as a pretraining run is: the one lifecycle, slot,
watcher and event stream. This spec says its command, what its events fold into and what it
leaves (classifiers). Its folder:

    DATA_DIR/finetunes/<id>/job.json      settings and status (written aside, renamed into place)
                            task.jsonl    an uploaded task file
                            events.jsonl  the trainer's standard output: every JSON line it printed
                            stderr.log    the trainer's own messages (the reason when it dies)
                            trainer.lock  held by the trainer while it lives (its PID and start time inside)
                            out/          the trainer's --out: classifiers/<arm>/ model sets

What the job has done (results, summary, classifiers) is folded from events.jsonl as it grows
(app/finetunes/events.py; one fold per job and worker, app/jobs/eventlog.py), never kept twice. Finished classifiers join the registry as model sets of kind
"classifier" (id `<job>.<arm>`), on every worker (the periodic rescan of app/routers/runs.py).
"""
from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

from ..errors import ApiError
from ..jobs.kernel import Jobs
from ..schemas.finetunes import FinetuneSummary
from . import events as ev
from .plan import job_plan
from .step_times import StepTimes
from .tasks import shipped_tasks

INTERRUPTED = "the server stopped while this fine-tune was running; its finished classifiers stay usable"
ORPHANED = ("the fine-tune's process ended while no server watched it (the server was stopped or killed); "
            "its finished classifiers stay usable")


class FinetuneManager(Jobs):
    NOUN, ID_PREFIX, RECORD, EVENTS = "fine-tune", "f", "job.json", "events.jsonl"
    ID = re.compile(r"^f-[0-9]{8}-[0-9]{6}-[0-9a-f]{4}$")
    STDOUT_IS_EVENTS = True  # the trainer's standard output is events.jsonl
    HANDS_TRAINER_LOCK = True  # the server takes the trainer lock and hands it over
    ENDINGS, FINISHED, LANDED = ("summary", "error"), "summary", "classifier"
    BUSY, DELETE_ONE = "the training slot is busy", "delete one first"
    WORDS = {"process": "fine-tune process", "stopped": INTERRUPTED, "orphaned": ORPHANED}
    SCHEMA = FinetuneSummary  # a stored job.json must fit what GET /api/finetunes promises (else set aside)

    def __init__(self, settings, registry, runs):
        super().__init__(settings, registry, Path(settings.data_dir) / "finetunes")
        self.jobs_dir = self.root
        self.slot_users.append(runs.active_label)  # one training slot for both kinds
        self.runs = runs
        self._tasks: list[dict] | None = None
        # this machine's step time per model set, for the estimate before Start (app/finetunes/step_times.py)
        self.step_times = StepTimes(self.data_dir, self.REPO, self.niced, self.slot_holder)

    # ---- the spec --------------------------------------------------------------------------------
    new_state = staticmethod(ev.new_state)
    fold_event = staticmethod(ev.fold_one)

    def problem(self, record, folder: Path) -> str | None:
        wrong = super().problem(record, folder)
        if wrong is None and not isinstance(record["settings"].get("task_label"), str):  # its name everywhere
            return "settings.task_label: Input should be a valid string"
        return wrong

    def label(self, job: dict) -> str:
        return f"fine-tune on {job['settings']['task_label']}"

    def on_event(self, job_id: str, event: dict) -> None:
        """A fine-tune's start line carries the step time it measured: the model set's kept one (issue 42)."""
        if event.get("event") == "start" and isinstance(event.get("estimate"), dict):
            st = self.get(job_id)["settings"]
            self.step_times.learn(st["model"], Path(st["model_dir"]), event["estimate"], f"fine-tune {job_id}")

    def slot_holder(self) -> str | None:
        """Who holds the training slot, in words (a run or a fine-tune), or None."""
        holder = self.active_label() or next((h for h in (u() for u in self.slot_users) if h), None)
        return holder["name"] if holder else None

    def _classifier(self, job: dict, c: dict) -> tuple[str, Path, dict] | None:
        """The model set of one `classifier` event, when its folder is complete and inside the job's output."""
        out_dir = (self.folder(job["id"]) / "out").resolve()
        folder = (out_dir / str(c.get("dir", ""))).resolve()
        if out_dir not in folder.parents or not (folder / "classifier.onnx").is_file():
            return None
        arm = re.sub(r"[^a-z0-9_-]", "", str(c.get("arm", "")).lower())[:20] or "model"
        task = job["settings"]["task_label"]
        return (f"{job['id']}.{arm}", folder,
                {"name": f"{task} · {arm} ({job['id'][2:17]})", "kind": "classifier", "run": job["id"]})

    def model_sets(self, job: dict) -> list[tuple[str, Path, dict]]:
        """The job's written classifiers."""
        sets = (self._classifier(job, c) for c in self.events(job["id"]).folded(lambda st: list(st["classifiers"])))
        return [s for s in sets if s is not None]

    def command(self, job: dict) -> list[str]:
        st, job_dir = job["settings"], self.folder(job["id"])
        task = str(job_dir / "task.jsonl") if st["task"] is None else st["task"]  # None: uploaded
        cmd = [sys.executable, "-m", "training", "finetune", "--model", st["model_dir"], "--task", task,
               "--arms", ",".join(st["arms"]), "--sizes", ",".join(str(s) for s in st["sizes"]),
               "--seeds", str(st["seeds"]), "--out", str(job_dir / "out"), "--threads", str(st["threads"])]
        if st.get("steps"):
            cmd += ["--steps", str(st["steps"])]
        if st.get("run_dir"):
            cmd += ["--snapshots", st["run_dir"]]
        if st.get("readout") is not None:  # the start's readout, over the task's own declaration
            cmd += ["--readout", json.dumps(st["readout"])]
        return cmd

    # ---- reading ---------------------------------------------------------------------------------
    def get(self, job_id: str) -> dict:
        if self.ID.match(job_id):
            try:
                return self._read(self.folder(job_id), False)
            except (OSError, ValueError):
                pass
        raise ApiError(f"no fine-tune called {job_id!r} (GET /api/finetunes lists them)", "finetune_id", status=404)

    def detail(self, job_id: str) -> dict:
        """The job with what it has done so far (folded from its events as they arrived)."""
        job = self.get(job_id)
        state = self.events(job_id).folded(ev.finish)
        sets = [(c, self._classifier(job, c)) for c in state["classifiers"]]
        state["classifiers"] = [{**c, "model": s[0] if s else None} for c, s in sets]
        return {**job, **state}

    def tasks(self) -> list[dict]:
        """The shipped tasks, read from their files (app/finetunes/tasks.py)."""
        if self._tasks is None:
            self._tasks = shipped_tasks()
        return self._tasks

    # ---- starting --------------------------------------------------------------------------------
    def start(self, settings: dict, task_text: str | None) -> dict:
        """settings: model, model_dir, run_dir (snapshots), task (name) or task_label, arms, sizes,
        seeds, steps. Checked by the router; here: the plan (app/finetunes/plan.py), the slot, the
        folder, the process."""

        # what it will do, said before Start and kept with the job: skipped sizes, can the test part compare
        settings = {**settings, "plan": job_plan(settings, task_text, self.settings.max_corpus_bytes)}

        def record(job_id: str, threads: int) -> dict:
            return {"id": job_id, "status": "queued", "created": time.time(), "started": None, "ended": None,
                    "reason": None, "settings": {**settings, "threads": threads}, "pid": None, "exit_code": None}

        return self.launch(record, {} if task_text is None else {"task.jsonl": task_text})
