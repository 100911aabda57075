"""Training runs: `python -m training.live` as a subprocess, its status, its events, its model sets.

app/ never imports torch or training/: a run is a child process (at lower CPU priority, `nice`,
with at most cores - 1 threads) that prints one JSON object per line and writes a run folder:

    DATA_DIR/runs/<id>/run.json        status, settings, corpus, metrics (written here, atomically)
                       corpus.txt      the text it trains on (pasted or uploaded)
                       progress.jsonl  every event line (written by the trainer): the history
                       snapshots/step-NNNNNN/, final/   model sets, each renamed into place whole
                       stderr.log      the trainer's own messages (the reason when it dies)

One run trains at a time across every worker: the worker that starts it holds an flock on
DATA_DIR/train.lock until the process ends (a crashed worker's lock goes with it). Any worker
serves the finished runs: each one scans the data folder every few seconds and adds new model
sets to its registry (loaded on first use, a bounded number in memory). The events stream is
the progress file tailed, so a student's stream can be served by any worker.

Runs shipped with the models (MODELS_DIR/runs/<id>/, same shape, finished) are listed and served
beside the class's own, read-only: "watch it learn" works on a fresh install with no training.
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from .errors import ApiError
from .run_rules import ACTIVE, TEST_PRESETS, TRAIN_MISSING, check_corpus, training_available

log = logging.getLogger("app")
REPO = Path(__file__).resolve().parents[1]
RUN_ID = re.compile(r"^(r-[0-9]{8}-[0-9]{6}-[0-9a-f]{4}|example-[a-z0-9-]{1,40})$")


def write_json(path: Path, data) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


class RunManager:
    def __init__(self, settings, registry):
        self.settings, self.registry = settings, registry
        self.data_dir = Path(settings.data_dir)
        self.runs_dir = self.data_dir / "runs"
        self.shipped_dir = Path(settings.models_dir) / "runs"  # example runs that come with the models
        self.lock = threading.RLock()
        self.procs: dict[str, subprocess.Popen] = {}  # runs this process started
        self.registered: dict[str, Path] = {}  # model set id -> folder, as added to the registry
        self.problem: str | None = None  # why runs cannot be stored (data folder not writable)
        self.stopping = False  # server shutdown: runs cut short now are "interrupted", not "cancelled"
        self._presets: list[dict] | None = None
        self.slot_users: list = []  # callables: who else holds the training slot ({id, name} or None)

    # ---- startup, folders, the registry ----------------------------------------------------------
    def startup(self) -> None:
        """Mark runs cut short by a stopped server, and serve every run's model sets. (The data
        folder is made by the first run: serving alone writes nothing.)"""
        if not self.runs_dir.is_dir():
            self.sync_registry()  # the shipped example runs
            return
        try:
            fd = self._try_lock()
        except OSError as e:
            self.problem = f"the data folder {self.data_dir} is not writable ({e.strerror})"
            fd = None
        if fd is not None:  # nobody trains: whatever says running was cut short by a stop
            try:
                for run in self.list():
                    if run["status"] in ACTIVE and not run.get("shipped"):
                        self._clean_partial(self.runs_dir / run["id"])
                        self._update(run["id"], status="interrupted", ended=time.time(),
                                     reason="the server stopped while this run was training; its finished snapshots stay usable")
            finally:
                os.close(fd)
        self.sync_registry()

    def _try_lock(self) -> int | None:
        fd = os.open(self.data_dir / "train.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError:
            os.close(fd)
            return None

    @staticmethod
    def _clean_partial(run_dir: Path) -> None:
        for folder in (run_dir, run_dir / "snapshots"):
            for p in folder.glob(".tmp-*") if folder.is_dir() else []:
                shutil.rmtree(p, ignore_errors=True)

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

    def sync_registry(self) -> None:
        """Add new complete sets to this worker's registry and drop those of deleted runs."""
        if self.registry is None:
            return
        with self.lock:  # the watcher thread and the periodic scan may both call this
            self._sync_registry()

    def _sync_registry(self) -> None:
        seen: dict[str, Path] = {}
        for run in self.list():
            for set_id, folder, fields in self.model_sets(run):
                seen[set_id] = folder
                if set_id not in self.registered:
                    try:
                        self.registry.add(folder, id=set_id, **fields)
                        self.registered[set_id] = folder
                    except (OSError, ValueError) as e:
                        log.warning("run set %s not added: %s", set_id, e)
        for set_id in [i for i in self.registered if i not in seen]:
            self.registry.drop(set_id)
            del self.registered[set_id]

    # ---- reading ---------------------------------------------------------------------------------
    def run_dir(self, run_id: str) -> Path:
        """A class run's folder, or a shipped example run's."""
        own = self.runs_dir / run_id
        shipped = self.shipped_dir / run_id
        return shipped if not own.is_dir() and shipped.is_dir() else own

    def list(self) -> list[dict]:
        runs = []
        for folder, shipped in ((self.runs_dir, False), (self.shipped_dir, True)):
            if not folder.is_dir():
                continue
            for d in folder.iterdir():
                if RUN_ID.match(d.name):
                    try:
                        runs.append({**read_json(d / "run.json"), "shipped": shipped})
                    except (OSError, ValueError):
                        continue  # a run being created or deleted
        return sorted(runs, key=lambda r: r.get("created", 0), reverse=True)

    def get(self, run_id: str) -> dict:
        if RUN_ID.match(run_id):
            try:
                return {**read_json(self.run_dir(run_id) / "run.json"), "shipped": self.run_dir(run_id) != self.runs_dir / run_id}
            except (OSError, ValueError):
                pass
        raise ApiError(f"no training run called {run_id!r} (GET /api/runs lists them)", "run_id", status=404)

    def active(self) -> dict | None:
        return next((r for r in self.list() if r["status"] in ACTIVE), None)

    def _update(self, run_id: str, **fields) -> dict:
        with self.lock:
            path = self.runs_dir / run_id / "run.json"
            run = {**read_json(path), **fields}
            write_json(path, run)
            return run

    def presets(self) -> list[dict]:
        """The budget presets, asked of training/presets.py through a subprocess (no torch import)."""
        if self._presets is None:
            try:
                out = subprocess.run([sys.executable, "-m", "training.live", "--list-presets"], cwd=REPO,
                                     capture_output=True, text=True, timeout=60, check=True).stdout
                self._presets = json.loads(out)
            except (OSError, ValueError, subprocess.SubprocessError) as e:
                log.warning("training presets unavailable: %s", e)
                return []
        tests = [{"name": n, "minutes": 1.0, "test_only": True, "gpt": c, "bert": c} for n, c in TEST_PRESETS.items()]
        return self._presets + (tests if self.settings.run_test_presets else [])

    # ---- starting --------------------------------------------------------------------------------
    def start(self, corpus: str | None, name: str | None, families: list[str], minutes: float,
              preset: str | None, seed: int) -> dict:
        s = self.settings
        if not training_available():
            raise ApiError(TRAIN_MISSING, None, status=503)
        if corpus is not None:
            check_corpus(corpus, s.max_corpus_bytes)
        names = [p["name"] for p in self.presets()]
        if preset is not None and preset not in names:
            raise ApiError(f"preset must be one of {', '.join(names) or '(none: training is not installed)'}", "preset")
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
            fd = self._try_lock()
        except OSError as e:
            raise ApiError(f"the data folder {self.data_dir} is not writable ({e.strerror}); start the server "
                           f"with a writable --data-dir", None, status=503) from None
        if fd is None:
            running = self.active() or next(filter(None, (user() for user in self.slot_users)), None)
            what = f"{running['id']} ({running['name']})" if running else "another run"
            raise ApiError(f"a run is already training: {what}; cancel it or wait for it to finish", None, status=409)
        try:
            stored = [r for r in self.list() if not r.get("shipped")]
            if len(stored) >= s.max_runs:
                raise ApiError(f"{len(stored)} runs are stored, the limit is {s.max_runs}: delete a run first",
                               None, status=507)
            run_id = time.strftime("r-%Y%m%d-%H%M%S-", time.gmtime()) + secrets.token_hex(2)
            run_dir = self.runs_dir / run_id
            try:
                run_dir.mkdir(parents=True)
                if corpus is not None:
                    (run_dir / "corpus.txt").write_text(corpus, encoding="utf-8")
            except OSError as e:
                shutil.rmtree(run_dir, ignore_errors=True)
                raise ApiError(f"the data folder {self.data_dir} is not writable ({e.strerror}); "
                               f"start the server with a writable --data-dir", None, status=503) from None
            threads = s.run_threads or max(1, (os.cpu_count() or 2) - 1)
            run = {"id": run_id, "name": name or ("Shakespeare" if corpus is None else "Our text"),
                   "status": "queued", "created": time.time(), "started": None, "ended": None, "reason": None,
                   "settings": {"families": families, "minutes": minutes, "preset": preset, "seed": seed,
                                "threads": threads},
                   "corpus": {"source": "shipped" if corpus is None else "text",
                              "characters": None if corpus is None else len(corpus)},
                   "progress": {}, "validation": {}, "models": None, "metrics": None, "commands": None,
                   "snapshots": [], "sample": None, "pid": None, "exit_code": None}
            write_json(run_dir / "run.json", run)
            cmd = self._command(run, corpus is not None)
            threading.Thread(target=self._watch, args=(run, cmd, fd), name=f"run-{run_id}", daemon=True).start()
            fd = None  # the watcher releases it when the process ends
            return run
        finally:
            if fd is not None:
                os.close(fd)

    def _command(self, run: dict, has_corpus: bool) -> list[str]:
        st, run_dir = run["settings"], self.runs_dir / run["id"]
        cmd = [sys.executable, "-m", "training.live", "--out", str(run_dir), "--families", ",".join(st["families"]),
               "--minutes", f"{st['minutes']:g}", "--seed", str(st["seed"]), "--threads", str(st["threads"]),
               "--export-cache", str(self.data_dir / "traced"), "--die-with-parent"]
        if has_corpus:
            cmd += ["--corpus", str(run_dir / "corpus.txt")]
        if st["preset"] in TEST_PRESETS:
            cmd += ["--overrides", json.dumps(TEST_PRESETS[st["preset"]])]
        elif st["preset"]:
            cmd += ["--preset", st["preset"]]
        nice = shutil.which("nice")
        return [nice, "-n", str(self.settings.run_nice), *cmd] if nice and self.settings.run_nice else cmd

    # ---- watching a run (a thread of the worker that started it) ---------------------------------
    def _watch(self, run: dict, cmd: list[str], lock_fd: int) -> None:
        run_id, run_dir = run["id"], self.runs_dir / run["id"]
        env = {**os.environ, "OMP_NUM_THREADS": str(run["settings"]["threads"]), "PYTHONUNBUFFERED": "1"}
        last: dict = {}
        try:
            with open(run_dir / "stderr.log", "wb") as err:
                proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                        env=env, start_new_session=True, text=True, encoding="utf-8")
            self.procs[run_id] = proc
            self._update(run_id, status="running", started=time.time(), pid=proc.pid)
            for line in proc.stdout:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if isinstance(event, dict):
                    last = event
                    self._on_event(run_id, event)
            code = proc.wait()
            self._finish(run_id, code, last)
        except Exception as e:  # noqa: BLE001 - the run fails, the server keeps serving
            log.exception("run %s", run_id)
            self._update(run_id, status="failed", ended=time.time(), reason=f"the run could not be watched: {e}")
        finally:
            self.procs.pop(run_id, None)
            os.close(lock_fd)
            self._clean_partial(run_dir)
            self.sync_registry()

    def _on_event(self, run_id: str, e: dict) -> None:
        kind = e.get("event")
        if kind == "models":
            self._update(run_id, models=e.get("models"), commands=e.get("commands"),
                         corpus={**self.get(run_id)["corpus"], **(e.get("corpus") or {})})
        elif kind == "progress":
            run = self.get(run_id)
            self._update(run_id, progress={**run["progress"], e["family"]: {
                k: e.get(k) for k in ("step", "loss", "tokens_per_s", "elapsed_s", "remaining_s", "fraction")}})
        elif kind == "eval":
            run = self.get(run_id)
            self._update(run_id, validation={**run["validation"], e["family"]: {"step": e["step"], "loss": e.get("val_loss")}})
        elif kind == "sample":
            self._update(run_id, sample={k: e.get(k) for k in ("step", "gpt", "bert")})
        elif kind == "snapshot":
            run = self.get(run_id)
            entry = {"name": e["name"], "step": e["step"], "steps": e.get("steps"), "final": e.get("final", False),
                     "id": run_id if e.get("final") else f"{run_id}@{e['step']}"}
            run = self._update(run_id, snapshots=[*run["snapshots"], entry],
                               **({"steps": e.get("steps")} if e.get("final") else {}))
            self.sync_registry()  # playable at once on this worker; the others pick it up on their scan
        elif kind == "finished":
            self._update(run_id, metrics=e.get("metrics"), validation_loss=e.get("validation_loss"),
                         steps=e.get("steps"), commands=e.get("commands"), playable_after_s=e.get("playable_after_s"))

    def _finish(self, run_id: str, code: int, last: dict) -> None:
        run_dir = self.runs_dir / run_id
        kind = last.get("event")
        if kind == "finished" and code == 0:
            status, reason = "finished", None
        elif self.stopping:
            status, reason = "interrupted", "the server stopped while this run was training; its finished snapshots stay usable"
        elif kind == "cancelled" or (run_dir / "cancel-requested").exists():
            status, reason = "cancelled", "cancelled by the instructor"
        elif kind == "error":
            status, reason = "failed", last.get("message")
        else:
            how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
            tail = ""
            try:
                lines = (run_dir / "stderr.log").read_text(encoding="utf-8", errors="replace").strip().splitlines()
                tail = f": {lines[-1][:300]}" if lines else ""
            except OSError:
                pass
            status, reason = "failed", f"the training process {how}{tail}"
        self._update(run_id, status=status, reason=reason, ended=time.time(), exit_code=code)

    # ---- cancelling and deleting -----------------------------------------------------------------
    def cancel_or_delete(self, run_id: str) -> dict:
        run = self.get(run_id)
        if run.get("shipped"):
            raise ApiError(f"{run_id} is an example run shipped with the models; it cannot be deleted", "run_id",
                           status=409)
        run_dir = self.runs_dir / run_id
        if run["status"] in ACTIVE:
            (run_dir / "cancel-requested").touch()
            pid = run.get("pid")
            if pid:
                try:
                    os.killpg(pid, signal.SIGTERM)  # the trainer and its tracer (own session)
                except (ProcessLookupError, PermissionError):
                    pass
                threading.Thread(target=self._kill_later, args=(pid,), daemon=True).start()
            return {**run, "status": "cancelling"}
        trash = self.data_dir / f".deleted-{run_id}"
        for set_id, _, _ in self.model_sets(run):
            if self.registry is not None:
                self.registry.drop(set_id)
            self.registered.pop(set_id, None)
        run_dir.rename(trash)  # gone from listings at once, then removed
        shutil.rmtree(trash, ignore_errors=True)
        return {**run, "status": "deleted"}

    @staticmethod
    def _kill_later(pid: int, grace_s: float = 3.0) -> None:
        """Cancel frees the CPU at once: a trainer that has not stopped after the grace is killed."""
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            try:
                os.killpg(pid, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.1)
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def kill_all(self) -> None:
        """Server shutdown: stop the runs this process started (marked interrupted)."""
        self.stopping = True
        for proc in list(self.procs.values()):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
