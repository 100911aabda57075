"""The one model-set writer: the card of a model, the files of a set, and the background writer
of a live run's sets. `python -m training package` and live runs both write through here.

Live runs (training/live/) write their sets in a background thread.

A dynamo ONNX export traces the model (5-15 s on a busy 2-core CPU) but its result, before
optimisation, keeps each parameter as an initializer named after it. So each family is traced
once per run (the *template*), and every later snapshot only swaps its weights in, optimises a
copy and saves it (~0.5 s). Every file is still checked against PyTorch by export.check_parity;
should a swapped graph ever disagree, the set falls back to a full export.

A set is assembled in `.tmp-<name>` beside its destination and renamed into place when complete,
so readers (the app) only ever see whole folders. Jobs are served final first, then in order.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import onnx_ir as ir
import torch

from app.contract import VOCAB_FILE, card_file, onnx_file, write_json

from ..device import precision_that_runs
from ..families import FAMILIES, build_model, family
from ..model import count_parameters
from . import OPSET, check_parity, export_onnx, program, save_program

# The traced graph depends on the exporter's code and every family's model and wrapper (the modules
# their entries name, so a new family's file counts with no line here): part of the cache key.
_CODE = Path(__file__).parents[1]


def _traced_code() -> list[Path]:
    modules = {ref.partition(":")[0] for f in FAMILIES.values() for ref in (f.model, f.export)} | {"training.export"}
    files = set()
    for name in modules:
        base = _CODE.parent.joinpath(*name.split("."))
        files |= {p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()}
    return sorted(files)


EXPORTER_HASH = hashlib.sha256(b"".join(p.read_bytes() for p in _traced_code())).hexdigest()[:12]


class SnapshotError(RuntimeError):
    pass


def template_path(cache_dir: Path, family: str, model_cfg) -> Path:
    key = json.dumps([family, model_cfg.to_dict(), torch.__version__, OPSET, EXPORTER_HASH], sort_keys=True)
    return cache_dir / f"{family}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.onnx"


def trace_to(path: Path, family: str, model_cfg, model=None):
    """Trace one family (any weights: they are swapped in later) and keep the graph in `path`."""
    model = model if model is not None else build_model(family, model_cfg).eval()
    traced = program(family, model)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        ir.save(traced.model, str(tmp))
        tmp.replace(path)
    except OSError:  # the cache is an optimisation only; a full disk leaves no half-written temporary
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
    return traced


def start_tracer(cache_dir: Path, model_cfg: dict):
    """Tracing is slow pure-Python work: in a process of its own it does not hold the training
    loop's interpreter lock (in a thread it made each training step ~3x slower)."""
    todo = {f: c.to_dict() for f, c in model_cfg.items() if not template_path(cache_dir, f, c).exists()}
    if not todo:
        return None
    return subprocess.Popen([sys.executable, "-m", "training.export.model_set", str(cache_dir), json.dumps(todo)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def card(tc: dict, model_cfg: dict, model, step: int, elapsed: float, curves: list, corpus: dict,
         evaluation: dict, training: dict | None = None, command: str | None = None) -> dict:
    """The card of one model (app.contract.CARD_KEYS; "onnx" is added when its file is written).
    tc: the TrainConfig as a dict (a checkpoint's train_config)."""
    import platform

    fam = family(tc["family"])
    out = {
        "name": fam.name, "family": fam.name, **fam.card(tc), "config": model_cfg, "parameters": count_parameters(model),
        "corpus": corpus,
        "training": {
            "steps": step, "tokens": step * tc["batch_size"] * tc["context"], "seconds": round(elapsed, 1),
            "seed": tc["seed"], "batch_size": tc["batch_size"], "lr": tc["lr"], "warmup": tc["warmup"],
            "weight_decay": tc["weight_decay"], "mask_rate": tc["mask_rate"] if fam.masked else None,
            "masking": tc.get("masking", "char") if fam.masked else None, "clock": tc.get("clock", "wall"),
            "threads": tc["threads"], "compile": tc.get("compile", False),
            "precision": precision_that_runs(tc.get("device") or "cpu", tc.get("precision", "fp32")),
            "optimizer": tc.get("optimizer"), "schedule": tc.get("schedule"), "dropout": tc.get("dropout"),
            "device": tc.get("device") or "cpu",  # checkpoints from before --device trained on the CPU
            "machine": (tc.get("extra") or {}).get("device_name") or f"{platform.machine()} CPU", **(training or {})},
        "evaluation": evaluation, "curves": curves,
    }
    if tc.get("init_from"):  # where its weights started (a path on the machine that trained it: only the file name)
        out["training"]["init_from"] = "a trained BERT of the same size (" + Path(tc["init_from"]).name + ")"
    if command is not None:
        out["command"] = command
    return out


def full_export(name: str, model, path: Path, threads: int = 0) -> dict:
    """Trace, optimise, save and check one model's graph; the parity report."""
    export_onnx(name, model, path)
    parity = check_parity(name, model, path, model.cfg.vocab_size, threads=threads)
    if not parity["ok"]:
        raise SnapshotError(f"ONNX parity check failed for {name}: {json.dumps(parity)}")
    return parity


def write_model_files(folder: Path, models: dict, cards: dict, vocab_json: dict, files: dict, export=full_export,
                      stopped=lambda: False, web: bool = True) -> bool:
    """Into `folder`: <family>.onnx (by `export`) and <family>.card.json for each model, vocab.json
    and any extra JSON `files`; every file written aside and renamed into place. False if
    `stopped()` turned true on the way (the caller then drops the folder)."""
    for name, model in models.items():
        path = folder / onnx_file(name)
        parity = export(name, model, path)
        cards[name]["onnx"] = {"file": path.name, "bytes": path.stat().st_size, "opset": OPSET,
                               "parity_max_abs_diff": parity["max_abs_diff"]}
        write_json(folder / card_file(name), cards[name])
        if stopped():
            return False
    write_json(folder / VOCAB_FILE, vocab_json)
    for file_name, data in files.items():
        write_json(folder / file_name, data)
    if web:
        add_web_copies(folder)
    return True


def add_web_copies(folder: Path) -> None:
    """The browser's copies (training/export/web.py); a set without them is still served."""
    try:
        from .web import write_web_copies

        write_web_copies(folder)
    except Exception as e:  # noqa: BLE001
        print(f"web copies of {folder} not written: {e}", file=sys.stderr)


class SetWriter(threading.Thread):
    """Writes model sets from (state dicts, cards) jobs; `submit` returns at once."""

    def __init__(self, model_cfg, vocab_json: dict, threads: int, on_done, on_error, cache_dir: Path):
        super().__init__(name="set-writer", daemon=True)
        self.model_cfg = model_cfg  # {family: TransformerConfig}
        self.vocab_json = vocab_json
        self.threads = threads
        self.on_done, self.on_error = on_done, on_error  # callbacks (from this thread)
        self.jobs: queue.PriorityQueue = queue.PriorityQueue()
        self.order = itertools.count()
        self.templates: dict = {}
        self.cache_dir = cache_dir
        self.tracer = start_tracer(cache_dir, model_cfg)
        self.lock = threading.Lock()  # held while a set is renamed into place, and to stop
        self.stopped = False
        self.pending = 0
        self.idle = threading.Event()
        self.idle.set()
        self.timings: list[dict] = []

    def submit(self, dest: Path, states: dict, cards: dict, extra: dict, info: dict, first: bool = False) -> None:
        """states: {family: state_dict (copied)}; cards: {family: card}; extra: {file name: JSON}."""
        with self.lock:
            self.pending += 1
            self.idle.clear()
        self.jobs.put((0 if first else 1, next(self.order), (dest, states, cards, extra, info)))

    def stop(self) -> None:
        """No further set lands after this returns (a set being renamed finishes first)."""
        with self.lock:
            self.stopped = True
        if self.tracer is not None and self.tracer.poll() is None:
            self.tracer.kill()
        self.jobs.put((-1, -1, None))

    def run(self) -> None:
        while True:
            _, _, job = self.jobs.get()
            if job is None or self.stopped:
                return
            dest, states, cards, extra, info = job
            try:
                t0 = time.perf_counter()
                landed = self.write_set(dest, states, cards, extra)
                if landed:
                    self.timings.append({"set": dest.name, "seconds": round(time.perf_counter() - t0, 2)})
                    self.on_done(dest, info, time.perf_counter() - t0)
                    # the set is playable now; its web copies follow (their manifest is written last)
                    add_web_copies(dest)
            except Exception as e:  # one bad set must not end the run: report it
                self.on_error(dest, info, e)
            finally:
                with self.lock:
                    self.pending -= 1
                    if self.pending == 0:
                        self.idle.set()

    def write_set(self, dest: Path, states: dict, cards: dict, extra: dict) -> bool:
        tmp = dest.with_name(f".tmp-{dest.name}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            models = {}
            for name, state in states.items():
                models[name] = build_model(name, self.model_cfg[name])
                models[name].load_state_dict(state)
                models[name].eval()
            if not write_model_files(tmp, models, cards, self.vocab_json, extra, self.export, lambda: self.stopped, web=False):
                return False
            with self.lock:
                if self.stopped:
                    return False
                if dest.exists():  # a set of this name from an earlier attempt: replace it whole
                    shutil.rmtree(dest)
                tmp.rename(dest)
            return True
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def template(self, family: str, model):
        """The traced program of this family and shape: traced by the tracer process started with
        the run (or by an earlier run with the same shape), else traced here as a last resort."""
        cached = template_path(self.cache_dir, family, self.model_cfg[family])
        if not cached.exists() and self.tracer is not None:
            self.tracer.wait()
        if cached.exists():
            try:
                return torch.onnx.ONNXProgram(ir.load(str(cached)), None)
            except Exception:  # an unreadable cache entry: trace again and replace it
                pass
        return trace_to(cached, family, self.model_cfg[family], model)

    def export(self, family: str, model, path: Path) -> dict:
        """Weights swapped into this family's template; a full export if parity says otherwise."""
        vocab_size = self.model_cfg[family].vocab_size
        with torch.no_grad():
            template = self.templates.get(family)
            if template is None:
                template = self.templates[family] = self.template(family, model)
            weights = {f"{family}.{k}": v for k, v in model.state_dict().items()}
            inits = template.model.graph.initializers
            template.apply_weights({k: v for k, v in weights.items() if k in inits})
            # optimize() folds and deduplicates in place: optimise a copy, keep the template whole
            copy = torch.onnx.ONNXProgram(ir.serde.deserialize_model(ir.serde.serialize_model(template.model)), None)
            save_program(copy, path)
            parity = check_parity(family, model, path, vocab_size, threads=self.threads)
        if not parity["ok"]:
            parity = full_export(family, model, path, self.threads)
        return parity


if __name__ == "__main__":  # the tracer: python -m training.export.model_set CACHE_DIR '{"gpt": {config}, ...}'
    try:  # die with the run (Linux: PR_SET_PDEATHSIG)
        import ctypes

        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    from ..model import TransformerConfig

    torch.set_num_threads(1)
    for fam, cfg in json.loads(sys.argv[2]).items():
        trace_to(template_path(Path(sys.argv[1]), fam, TransformerConfig(**cfg)), fam, TransformerConfig(**cfg))
