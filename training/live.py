"""python -m training live: pretrain GPT and/or BERT side by side and report as it goes.

For the app's /train page (app/runs.py starts this as a subprocess), and usable in a terminal.
Both families share one corpus, one vocabulary and one skeleton; their steps are interleaved in
one process, the next step going to whichever model has had less compute so far. Every line on
stdout is one JSON object (also appended to RUN_DIR/progress.jsonl, the history for late joiners):

  start     settings, corpus, the equivalent command line     (before torch is even imported)
  models    parameter counts and configs
  progress  per family, about every second: step, train loss, tokens/s, elapsed, remaining
  eval      validation loss (fixed held-out batches)
  sample    every ~10 s: a seeded GPT continuation of a fixed prompt and a BERT fill of a fixed
            probe line, computed with the models as they are at that moment
  snapshot  a model set landed (snapshots/step-NNNNNN/ at log-spaced points, then final/)
  exporting training is over; the final set is being evaluated and exported
  finished  held-out metrics (the run's own test split), paths, timings
  cancelled | error    (SIGTERM/SIGINT stop at once; only complete folders are left)
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

from .live_corpus import CorpusError, describe, prepare_corpus, probe_line, vocabulary_chars
from .run_lock import hold as hold_run_lock

SNAPSHOT_FRACTIONS = (0.0, 0.01, 0.05, 0.2, 0.5)  # of the budget; plus final/
PROGRESS_EVERY_S = 1.0
SAMPLE_EVERY_S = 10.0
SAMPLE_CHARS, SAMPLE_SEED, SAMPLE_TEMPERATURE = 160, 7, 0.8
FILL_SEED = 11
DEFAULT_CORPUS = Path(__file__).parent / "corpus" / "shakespeare"  # = data.DEFAULT_CORPUS, without torch


class Stop(Exception):
    pass


class Events:
    """One JSON object per line on stdout (flushed) and in progress.jsonl; thread-safe."""

    def __init__(self, run_dir: Path):
        self.t0 = time.monotonic()
        self.lock = threading.RLock()
        self.file = open(run_dir / "progress.jsonl", "a", encoding="utf-8")
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


# --- the app's random stream, restated (app/sampling.py; app/ and training/ share no code):
# u_i = splitmix32(splitmix32(seed) ^ i) / 2^32; tests/training/test_live.py holds the two together.

def splitmix32(a: int) -> int:
    a = (a + 0x9E3779B9) & 0xFFFFFFFF
    t = a ^ (a >> 16)
    t = (t * 0x21F0AAAD) & 0xFFFFFFFF
    t ^= t >> 15
    t = (t * 0x735A2D97) & 0xFFFFFFFF
    return (t ^ (t >> 15)) & 0xFFFFFFFF


def uniform(seed: int, i: int) -> float:
    return splitmix32(splitmix32(seed) ^ i) / 4294967296


def gpt_sample(model, tok, prompt: str, n: int = SAMPLE_CHARS, seed: int = SAMPLE_SEED,
               temperature: float = SAMPLE_TEMPERATURE) -> dict:
    """n characters after `prompt`, drawn by inverse CDF over the ordinary characters (specials are
    never drawn) with the app's seeded stream, so the same model gives the same text."""
    import torch

    first = tok.first_char_id
    ids = [int(i) for i in tok.encode(prompt)] or [tok.stoi.get("\n", first)]
    out = []
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for i in range(n):
            x = torch.tensor([ids[-model.cfg.context:]])
            logits = model(x)[0, -1, first:].double() / temperature
            cdf = torch.cumsum(torch.softmax(logits, -1), 0)
            j = min(int(torch.searchsorted(cdf, uniform(seed, i) * float(cdf[-1]), right=True)), len(cdf) - 1)
            ids.append(first + j)
            out.append(tok.itos[first + j])
    model.train(was_training)
    return {"prompt": prompt, "text": "".join(out), "seed": seed, "temperature": temperature}


def fill_positions(probe: str, seed: int = FILL_SEED, rate: float = 0.15) -> list[int]:
    """Fixed positions to mask: ~15 % of the probe's letters, chosen by the seeded stream."""
    letters = [i for i, ch in enumerate(probe) if ch.isalpha()] or list(range(len(probe)))
    k = max(1, round(rate * len(letters)))
    ranked = sorted(letters, key=lambda i: uniform(seed, i))
    return sorted(ranked[:k])


def bert_fill(model, tok, probe: str, positions: list[int]) -> dict:
    """[CLS] probe [SEP] with `positions` masked: BERT's top guess and its probability at each."""
    import torch

    from .tokenizer import CLS, MASK, SEP

    ids = [CLS] + [int(i) for i in tok.encode(probe)][: model.cfg.context - 2] + [SEP]
    for p in positions:
        if p + 1 < len(ids) - 1:
            ids[p + 1] = MASK
    was_training = model.training
    model.eval()
    with torch.no_grad():
        mlm, _ = model(torch.tensor([ids]), torch.zeros(1, len(ids), dtype=torch.long))
        probs = torch.softmax(mlm[0, :, tok.first_char_id:].double(), -1)
    model.train(was_training)
    filled, guesses = list(probe), []
    for p in positions:
        if p + 1 >= len(ids) - 1:
            continue
        j = int(probs[p + 1].argmax())
        ch = tok.itos[tok.first_char_id + j]
        filled[p] = ch
        guesses.append({"position": p, "char": ch, "prob": round(float(probs[p + 1, j]), 4), "truth": probe[p]})
    masked = "".join("_" if i in set(positions) else ch for i, ch in enumerate(probe))
    return {"probe": probe, "masked": masked, "filled": "".join(filled), "guesses": guesses,
            "correct": sum(g["char"] == g["truth"] for g in guesses)}


# --- settings --------------------------------------------------------------------------------

def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m training live", description=__doc__.split("\n")[0])
    add_live_args(p)
    return p.parse_args(argv)


def add_live_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", help="run folder (snapshots/, final/, progress.jsonl); required")
    p.add_argument("--corpus", default=str(DEFAULT_CORPUS), help="UTF-8 text file or folder (default: shipped Shakespeare)")
    p.add_argument("--families", default="gpt,bert", help="gpt, bert or gpt,bert")
    p.add_argument("--minutes", type=float, default=None, help="wall-clock training budget (default: the preset's)")
    p.add_argument("--preset", default=None, help="model size and schedule by name (default: nearest to --minutes)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (default: cores - 1, at least 1)")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--overrides", default=None, help='JSON of TrainConfig fields over the preset, e.g. {"steps": 200}')
    p.add_argument("--export-cache", default=None, help="folder to keep traced ONNX graphs in, reused by later runs of the same shape")
    p.add_argument("--die-with-parent", action="store_true", help="stop when the process that started this one ends (the app)")
    p.add_argument("--list-presets", action="store_true", help="print the budget presets as JSON and exit")
    p.add_argument("--prompt", default=None, help="GPT sample prompt (default: a held-out line's start)")
    p.add_argument("--probe", default=None, help="BERT fill probe line (default: a held-out line)")


def family_configs(args, families, corpus_path: Path, corpus_chars: int, run_dir: Path) -> dict:
    from dataclasses import fields

    from .presets import preset_config
    from .train import TrainConfig

    names = {f.name for f in fields(TrainConfig)}
    overrides = json.loads(args.overrides) if args.overrides else {}
    bad = set(overrides) - names
    if bad:
        raise ValueError(f"--overrides: unknown TrainConfig fields {sorted(bad)}")
    configs = {}
    for family in families:
        values = {"steps": 10**9, "eval_batches": 8}
        values.update(preset_config(args.preset or float(args.minutes), family, corpus_chars))
        if args.minutes is not None:
            values["minutes"] = float(args.minutes)
        values.update(overrides)
        values.update(family=family, corpus=str(corpus_path), out=str(run_dir / "checkpoints"),
                      seed=args.seed, threads=args.threads)
        configs[family] = TrainConfig(**{k: v for k, v in values.items() if k in names})
    return configs


def command_lines(args, configs: dict, run_dir: Path) -> dict:
    live = ["python", "-m", "training", "live", "--out", str(run_dir), "--corpus", str(args.corpus_used),
            "--families", ",".join(configs), "--seed", str(args.seed)]
    if args.minutes is not None:
        live += ["--minutes", f"{args.minutes:g}"]
    if args.preset:
        live += ["--preset", args.preset]
    if args.overrides:
        live += ["--overrides", args.overrides]
    out = {"live": shlex.join(live)}
    for family, c in configs.items():
        cmd = ["python", "-m", "training", "train", family, "--corpus", c.corpus, "--out", f"runs/{family}"]
        for name in ("n_layer", "n_head", "n_embd", "n_ff", "context", "batch_size", "lr", "warmup", "seed"):
            cmd += ["--" + name.replace("_", "-"), f"{getattr(c, name):g}" if isinstance(getattr(c, name), float) else str(getattr(c, name))]
        cmd += ["--minutes", f"{c.minutes:g}"] + (["--steps", str(c.steps)] if c.steps < 10**9 else [])
        if family == "bert" and not c.nsp:
            cmd.append("--no-nsp")
        out[family] = shlex.join(cmd)
        out[f"{family}_extend"] = shlex.join(["python", "-m", "training", "train", family, "--resume",
                                              str(run_dir / "checkpoints" / f"{family}.pt"), "--minutes", f"{2 * c.minutes:g}"])
    return out


def clean_partial(run_dir: Path) -> None:
    """Remove half-assembled sets (.tmp-*): only complete folders may remain."""
    for folder in (run_dir, run_dir / "snapshots"):
        if folder.is_dir():
            for p in folder.glob(".tmp-*"):
                shutil.rmtree(p, ignore_errors=True)


def list_presets() -> list[dict]:
    from .presets import preset_config, preset_names

    return [{"name": n, "minutes": preset_config(n, "gpt")["minutes"],
             **{f: preset_config(n, f) for f in ("gpt", "bert")}} for n in preset_names()]


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
        if not families or set(families) - {"gpt", "bert"} or len(set(families)) != len(families):
            raise ValueError(f"--families: give gpt, bert or gpt,bert (got {args.families!r})")
        if args.minutes is not None and not args.minutes > 0:
            raise ValueError("--minutes must be positive")
        if args.minutes is None and args.preset is None:
            raise ValueError("give --minutes or --preset")
        from .presets import preset_names

        if args.preset is not None and args.preset not in preset_names():
            raise ValueError(f"--preset: choose one of {', '.join(preset_names())}")
        corpus_path, desc = prepare_corpus(args.corpus, run_dir)
        args.corpus_used = corpus_path
        args.threads = args.threads or max(1, (os.cpu_count() or 2) - 1)
        events.emit("start", pid=os.getpid(), families=families, minutes=args.minutes, preset=args.preset,
                    seed=args.seed, threads=args.threads, overrides=json.loads(args.overrides or "{}"), corpus=desc)
        from .live_run import LiveRun  # imports torch

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


if __name__ == "__main__":  # python -m training.live: starts without importing torch first
    from training.live import cli as _cli  # one module object, so live_run's Stop is this Stop

    _cli()
