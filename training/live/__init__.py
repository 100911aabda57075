"""python -m training live: pretrain any of the families (GPT, BERT, ...: app/contract/families.py) side by side and report as it goes.

For the app's /train page (app/runs/ starts this as a subprocess), and usable in a terminal.
Both families share one corpus, one vocabulary and one skeleton; their steps are interleaved in
one process, the next step going to whichever model has had less compute so far. Every line on
stdout is one JSON object (also appended to RUN_DIR/progress.jsonl, the history for late joiners):

  start     settings, corpus, the equivalent command line     (before torch is even imported)
  models    parameter counts and configs
  progress  per family, about every second (a family with no step since its last line waits):
            step, train loss, tokens/s, elapsed, remaining
  eval      validation loss (fixed held-out batches); BERT also val_masked_top1 beside
            val_masked_top1_unigram, the baseline (training/live/metrics.py)
  sample    every ~10 s: a seeded GPT continuation of a fixed prompt, a BERT fill of a fixed
            probe line and ELECTRA's verdict on it once its generator fills the masked characters,
            computed with the models as they are at that moment (training/live/views.py);
            `steps` is each model's own step count (`step`, all of them added up, names folders)
  snapshot  a model set landed (snapshots/step-NNNNNN/ at log-spaced points, then final/), with
            each model's steps and validation loss at that moment; every set carries
            examples.json, lines of the held-out text for the applets (app/contract/examples.py)
  exporting training is over; the final set is being evaluated and exported
  finished  held-out metrics (the run's own test split), paths, timings
  cancelled | error    (SIGTERM/SIGINT stop at once; only complete folders are left)
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

from app.contract import PROGRESS_FILE, SPECS, clean_partial

from ..device import DeviceError
from ..families import FAMILIES
from .corpus import CorpusError, prepare_corpus
from .settings import DEFAULT_CORPUS, Stop
from ..run_lock import hold as hold_run_lock


class Events:
    """One JSON object per line on stdout (flushed) and in progress.jsonl; thread-safe."""

    def __init__(self, run_dir: Path):
        self.t0 = time.monotonic()
        self.lock = threading.RLock()
        self.file = open(run_dir / PROGRESS_FILE, "a", encoding="utf-8")
        self.stdout_ok = True

    def emit(self, event: str, **fields) -> None:
        line = json.dumps({"event": event, "t": round(time.monotonic() - self.t0, 3), **fields}, ensure_ascii=False)
        with self.lock:
            self.file.write(line + "\n")
            self.file.flush()
            if self.stdout_ok:
                try:
                    print(line, flush=True)
                except (BrokenPipeError, OSError):  # the app is gone: nobody to train for
                    self.stdout_ok = False
                    os.kill(os.getpid(), signal.SIGTERM)


# --- settings --------------------------------------------------------------------------------

def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m training live", description=__doc__.split("\n")[0])
    add_live_args(p)
    return p.parse_args(argv)


def add_live_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", help="run folder (snapshots/, final/, progress.jsonl); required")
    p.add_argument("--corpus", default=str(DEFAULT_CORPUS), help="UTF-8 text file or folder (default: shipped Shakespeare)")
    trainable = [n for n, spec in SPECS.items() if spec.trainable]  # the specs say which, so a new family is listed
    p.add_argument("--families", default="gpt,bert", help=f"comma-separated: {', '.join(trainable)} (default gpt,bert)")
    p.add_argument("--minutes", type=float, default=None, help="wall-clock training budget (default: the preset's)")
    p.add_argument("--preset", default=None, help="model size and schedule by name (default: nearest to --minutes)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (default: cores - 1, at least 1)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                   help="auto (default): a CUDA GPU when PyTorch sees one, else the CPU")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--overrides", default=None, help='JSON of TrainConfig fields over the preset, e.g. {"steps": 200}')
    p.add_argument("--export-cache", default=None, help="folder to keep traced ONNX graphs in, reused by later runs of the same shape")
    p.add_argument("--die-with-parent", action="store_true", help="stop when the process that started this one ends (the app)")
    p.add_argument("--list-presets", action="store_true", help="print the budget presets as JSON and exit")
    p.add_argument("--prompt", default=None, help="GPT sample prompt (default: a held-out line's start)")
    p.add_argument("--probe", default=None, help="BERT fill probe line (default: a held-out line)")


def list_presets() -> list[dict]:
    from ..presets import preset_config, preset_names

    return [{"name": n, "minutes": next(preset_config(n, f) for f in FAMILIES)["minutes"],
             **{f: preset_config(n, f) for f in FAMILIES}} for n in preset_names()]


def die_with_parent() -> None:
    """Linux: the kernel sends SIGTERM when the starting process ends (the server killed mid-run
    must not leave an orphan trainer behind)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.list_presets:
        print(json.dumps(list_presets()))
        return 0
    if not args.out:
        print("python -m training live: --out is required", file=sys.stderr)
        return 2
    if args.die_with_parent:
        die_with_parent()
    run_dir = Path(args.out)
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        hold_run_lock(run_dir)  # held until this process ends: how a server knows the run is alive
    except BlockingIOError:
        print(f"python -m training live: another trainer is writing {run_dir}", file=sys.stderr)
        return 2
    events = Events(run_dir)
    stop = threading.Event()
    state = {"interruptible": True, "signal": None, "writer": None}

    def on_signal(signum, _frame):
        # The training loop polls `stop` between steps; long phases (imports, loading, the final
        # evaluation) are interrupted at once instead.
        state["signal"] = state["signal"] or signal.Signals(signum).name
        stop.set()
        if state["interruptible"]:
            state["interruptible"] = False
            raise Stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        families = [f.strip() for f in args.families.split(",") if f.strip()]
        if not families or set(families) - set(FAMILIES) or len(set(families)) != len(families):
            raise ValueError(f"--families: give one or more of {', '.join(FAMILIES)}, comma-separated (got {args.families!r})")
        if args.minutes is not None and not args.minutes > 0:
            raise ValueError("--minutes must be positive")
        if args.minutes is None and args.preset is None:
            raise ValueError("give --minutes or --preset")
        from ..presets import preset_names

        if args.preset is not None and args.preset not in preset_names():
            raise ValueError(f"--preset: choose one of {', '.join(preset_names())}")
        corpus_path, desc = prepare_corpus(args.corpus, run_dir)
        args.corpus_used = corpus_path
        args.threads = args.threads or max(1, (os.cpu_count() or 2) - 1)
        events.emit("start", pid=os.getpid(), families=families, minutes=args.minutes, preset=args.preset,
                    seed=args.seed, threads=args.threads, device=args.device, overrides=json.loads(args.overrides or "{}"), corpus=desc)
        from .run import LiveRun  # imports torch

        run = LiveRun(args, families, corpus_path, desc, run_dir, events, stop, state)
        state["writer"] = run.writer
        run.train()
        run.finish()
        return 0
    except Stop:
        if state["writer"] is not None:
            state["writer"].stop()
        clean_partial(run_dir)
        events.emit("cancelled", reason=f"stopped by {state['signal'] or 'a signal'}")
        return 0
    except CorpusError as e:
        events.emit("error", message=str(e), parameter="corpus")
        return 2
    except DeviceError as e:
        events.emit("error", message=str(e), parameter="device")
        return 2
    except Exception as e:
        if state["writer"] is not None:
            state["writer"].stop()
        clean_partial(run_dir)
        events.emit("error", message=f"{type(e).__name__}: {e}", traceback=traceback.format_exc(limit=6)[-2000:])
        return 1


def cli(argv=None) -> None:
    """Exit without waiting for the set writer thread (it may be inside a long export)."""
    code = main(argv)
    sys.stdout.flush()
    os._exit(code)


