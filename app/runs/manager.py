"""Pretraining runs as a kind of job (the spec on app/jobs/kernel.py): `python -m training.live` as
a subprocess, what its events mean, its model sets.

app/ never imports torch or training/: a run is a child process (at lower CPU priority, `nice`,
with at most cores - 1 threads) that writes one JSON object per line into progress.jsonl (the
history, folded into run.json by the watcher as it grows) and a run folder:

    DATA_DIR/runs/<id>/run.json        status, settings, corpus, progress, metrics (written here, atomically)
                       corpus.txt      the text it trains on (pasted or uploaded)
                       progress.jsonl  every event line (written by the trainer): the history
                       snapshots/step-NNNNNN/, final/   model sets, each renamed into place whole
                       stderr.log      the trainer's own messages (the reason when it dies)
                       trainer.lock    taken by the trainer itself while it lives (training/run_lock.py)

The slot, liveness, settling, signals, the watcher and the event stream are the kernel's, the
same as a fine-tune's (app/jobs/). Any worker serves the finished runs: each one scans the data
folder every few seconds and adds new model sets to its registry (loaded on first use, a bounded
number in memory).

Runs shipped with the models (MODELS_DIR/runs/<id>/, same shape, finished) are listed and served
beside the class's own, read-only: "watch it learn" works on a fresh install with no training.
"""
from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

from ..contract import EXAMPLES_FILE, PROGRESS_FILE, examples_from_corpus
from ..errors import ApiError
from ..jobs.kernel import Jobs
from ..schemas.runs import RunSummary
from .events import on_event
from .rules import TEST_PRESETS, check_corpus, clean_name, test_presets, training_presets

STOPPED = "the server stopped while this run was training; its finished snapshots stay usable"
ORPHANED = ("the server stopped (or was killed) while this run was training; its finished snapshots "
            "stay usable")


class RunManager(Jobs):
    NOUN, ID_PREFIX, RECORD, EVENTS = "run", "r", "run.json", PROGRESS_FILE
    ID = re.compile(r"^(r-[0-9]{8}-[0-9]{6}-[0-9a-f]{4}|example-[a-z0-9-]{1,40})$")
    STDOUT_IS_EVENTS = False  # training.live writes progress.jsonl itself
    HANDS_TRAINER_LOCK = False  # and takes its own trainer lock (training/run_lock.py)
    ENDINGS = ("finished", "cancelled", "error")  # the trainer's last words
    FINISHED, LANDED = "finished", "snapshot"
    BUSY, DELETE_ONE = "a run is already training", "delete a run first"
    WORDS = {"process": "training process", "stopped": STOPPED, "orphaned": ORPHANED}
    SCHEMA = RunSummary  # a stored run.json must fit what GET /api/runs promises (else it is set aside)

    def __init__(self, settings, registry):
        super().__init__(settings, registry, Path(settings.data_dir) / "runs")
        self.runs_dir = self.root
        self.shipped_dir = Path(settings.models_dir) / "runs"  # example runs that come with the models
        self._presets: list[dict] | None = None

    # ---- the spec --------------------------------------------------------------------------------
    def on_event(self, run_id: str, event: dict) -> None:
        on_event(self, run_id, event)

    def finished_fields(self, last: dict) -> dict:
        return {k: last[k] for k in ("metrics", "steps", "commands", "validation_loss") if k in last}

    def model_sets(self, run: dict) -> list[tuple[str, Path, dict]]:
        """(id, folder, registry fields) of the run's complete sets: its snapshots, then final."""
        run_dir, out = self.run_dir(run["id"]), []
        for folder in sorted((run_dir / "snapshots").glob("step-*")):
            if folder.is_dir() and (folder / "vocab.json").exists():
                step = int(folder.name.split("-")[1])
                out.append((f"{run['id']}@{step}", folder,
                            {"name": f"{run['name']} · step {step}", "kind": "snapshot", "run": run["id"], "step": step}))
        final = run_dir / "final"
        if (final / "vocab.json").exists():
            steps = (run.get("steps") or {}).values()
            out.append((run["id"], final, {"name": f"{run['name']} · final", "kind": "run", "run": run["id"],
                                           "step": sum(steps) if steps else None}))
        return out

    def _add_set(self, run: dict, set_id: str, folder: Path, fields: dict) -> None:
        # a set written before examples.json existed: from the run's own held-out text
        own = (folder / EXAMPLES_FILE).exists()
        examples = None if own else examples_from_corpus(self.run_dir(run["id"]) / "corpus")
        self.registry.add(folder, id=set_id, examples=examples, **fields)

    def command(self, run: dict) -> list[str]:
        st, run_dir = run["settings"], self.folder(run["id"])
        cmd = [sys.executable, "-m", "training.live", "--out", str(run_dir), "--families", ",".join(st["families"]),
               "--minutes", f"{st['minutes']:g}", "--seed", str(st["seed"]), "--threads", str(st["threads"]),
               "--export-cache", str(self.data_dir / "traced"), "--die-with-parent"]
        if run["corpus"]["source"] != "shipped":
            cmd += ["--corpus", str(run_dir / "corpus.txt")]
        if st["preset"] in TEST_PRESETS:
            cmd += ["--overrides", json.dumps(TEST_PRESETS[st["preset"]])]
        elif st["preset"]:
            cmd += ["--preset", st["preset"]]
        return cmd

    # ---- reading ---------------------------------------------------------------------------------
    def _folders(self) -> list[tuple[Path, bool]]:
        return [(self.runs_dir, False), (self.shipped_dir, True)]

    def run_dir(self, run_id: str) -> Path:
        """A class run's folder, or a shipped example run's."""
        own = self.runs_dir / run_id
        shipped = self.shipped_dir / run_id
        return shipped if not own.is_dir() and shipped.is_dir() else own

    def _read(self, folder: Path, shipped: bool) -> dict:
        return {**super()._read(folder, shipped), "shipped": shipped}

    def get(self, run_id: str) -> dict:
        if self.ID.match(run_id):
            folder = self.run_dir(run_id)
            try:
                return self._read(folder, folder != self.runs_dir / run_id)
            except (OSError, ValueError):
                pass
        raise ApiError(f"no training run called {run_id!r} (GET /api/runs lists them)", "run_id", status=404)

    def presets(self) -> list[dict]:
        """The budget presets (asked of training/ once, through a subprocess), test presets when enabled."""
        if self._presets is None:
            self._presets = training_presets(self.REPO)
        return (self._presets or []) + (test_presets() if self.settings.run_test_presets else [])

    # ---- starting, cancelling and deleting -------------------------------------------------------
    def start(self, corpus: str | None, name: str | None, families: list[str], minutes: float,
              preset: str | None, seed: int) -> dict:
        name = clean_name(name)
        if corpus is not None:
            check_corpus(corpus, self.settings.max_corpus_bytes)
        names = [p["name"] for p in self.presets()]
        if preset is not None and preset not in names:
            raise ApiError(f"preset must be one of {', '.join(names) or '(none: training is not installed)'}", "preset")

        def record(run_id: str, threads: int) -> dict:
            return {"id": run_id, "name": name or ("Shakespeare" if corpus is None else "Our text"),
                    "status": "queued", "created": time.time(), "started": None, "ended": None, "reason": None,
                    "settings": {"families": families, "minutes": minutes, "preset": preset, "seed": seed,
                                 "threads": threads},
                    "corpus": {"source": "shipped" if corpus is None else "text",
                               "characters": None if corpus is None else len(corpus)},
                    "progress": {}, "validation": {}, "models": None, "metrics": None, "commands": None,
                    "snapshots": [], "sample": None, "pid": None, "exit_code": None}

        return self.launch(record, {} if corpus is None else {"corpus.txt": corpus})

    def cancel_or_delete(self, run_id: str) -> dict:
        if self.get(run_id).get("shipped"):
            raise ApiError(f"{run_id} is an example run shipped with the models; it cannot be deleted", "run_id",
                           status=409)
        return super().cancel_or_delete(run_id)
