"""One model set + one task: each arm's fine-tune, export and GPT's way that training/finetune.py's
command line asks for, each returning the JSON event it prints.

    readout     no training: the pretrained model's own head read as the task declares, at zero labels
                (size 0) and with one threshold (readout.py)
    full        LP-FT: the probe's head, then everything fine-tuned (training/finetune/lpft.py)
    scratch     the same architecture (and a smaller one) from random weights, everything trained
    probe       the frozen pretrained BERT's features, a logistic regression (linear.py)
    ngram       character 1-3-grams, a logistic regression: no pretraining (linear.py)
"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

from app.contract.task_format import Task

from .loop import FinetuneConfig, TaskData, budget_note
from .lpft import finetune_one
from .model import build_classifier
from .stats import score, units
from ..inspect_export import model_from_onnx
from ..tokenizer import CharTokenizer

TRAINED = ("full", "scratch")
WHAT_TRAINS = {"full": "every weight (pretrained start)", "scratch": "every weight (random start, no pretraining)",
               "probe": "a logistic regression on the frozen pretrained encoder's features (put into the head)"}


class Lab:
    def __init__(self, folder: Path, task: Task, steps: int | None = None, threads: int = 1, device: str = "cpu"):
        self.folder, self.task, self.threads = Path(folder), task, threads
        if not (self.folder / "bert.onnx").exists():
            raise FileNotFoundError(f"--model: {folder} has no bert.onnx")
        self.bert, _ = model_from_onnx(self.folder, "bert")  # weights read back out of bert.onnx, checked
        self.tok = CharTokenizer.load(self.folder / "vocab.json")
        self.data = TaskData(task, self.tok.stoi, self.bert.cfg.context)
        self.cfg = FinetuneConfig(fixed_steps=steps, device=device)
        self.metric = "accuracy" if task.kind == "sequence" else "f1"
        self.golds = self.data.test_golds()
        self._probe = self._readout = None
        self.setup_cpu: dict[str, float] = {}
        self.cache, self.tracer = None, None

    def prepare_export(self, out: Path) -> None:
        """Start tracing the classifier graph in the background (training/finetune/export.py)."""
        from .export import start_tracer

        self.cache = Path(out) / ".cache"
        self.tracer = start_tracer(self.cache, self.bert.cfg.to_dict(), self.task.kind, len(self.task.labels))

    def how(self) -> str:
        return budget_note(self.cfg)

    def readout_how(self) -> str:
        from .readout import describe

        return describe(self.task)

    def finish_export(self) -> None:
        """The tracer is done with; its template cache goes (each job's folder keeps only results)."""
        import shutil

        if self.tracer is not None:
            self.tracer.wait()
        if self.cache is not None:
            shutil.rmtree(self.cache, ignore_errors=True)

    def skip_reason(self, arm: str) -> str | None:
        if arm == "readout":
            from .readout import why_not

            return why_not(self.task, (self.folder / "gpt.onnx").exists())
        return None

    def majority(self) -> dict:
        """The always-the-most-common-label answer, scored like an arm."""
        preds = [self.data.majority if self.task.kind == "sequence" else [self.data.majority] * len(g) for g in self.golds]
        u = units(preds, self.golds, self.task.kind, self.data.majority)
        return {"label": self.task.labels[self.data.majority], "score": score(u, self.metric),
                "accuracy": score(u, "accuracy"), "f1": score(u, "f1") if self.metric == "f1" else None}

    def _timed_setup(self, name: str, make):
        c0 = time.process_time()
        made = make()
        self.setup_cpu[name] = round(time.process_time() - c0, 3)
        return made

    def probe_features(self):
        if self._probe is None:
            from .linear import ProbeFeatures

            frozen = build_classifier("probe", self.bert, len(self.data.labels), self.data.kind, 0)
            self._probe = self._timed_setup("probe", lambda: ProbeFeatures(frozen, self.data, self.cfg.eval_batch))
        return self._probe

    def readout(self):
        if self._readout is None:
            from .readout import Readout

            self._readout = self._timed_setup("readout", lambda: Readout(self.folder, self.bert, self.data, self.threads))
        return self._readout

    def _run(self, arm: str, size, seed: int):
        """(model or None, test predictions, info)."""
        n = None if size == "all" else size
        if arm in TRAINED:
            return finetune_one(self.bert, self.data, arm, n, seed, self.cfg)
        if arm == "readout" and size == 0:
            preds, info = self.readout().zero()
            return None, preds, info | {"examples": 0, "validation": 0}
        chosen = self.data.choose(n, seed)
        from . import linear as lin

        fit, val = (chosen, []) if self.cfg.fixed_steps else self.data.split(chosen, seed, self.cfg.val_share)
        info = {"examples": len(chosen), "validation": len(val)}
        if arm == "readout":
            preds, more = self.readout().run(fit)
            return None, preds, info | more
        if arm == "ngram":
            preds, more = lin.ngram(self.data, fit, val, seed)
            return None, preds, info | more
        clf, scaler, preds, more = lin.probe(self.probe_features(), self.data, fit, val, seed)
        model = build_classifier("probe", self.bert, len(self.data.labels), self.data.kind, seed)
        lin.head_from_regression(model, clf, scaler, len(self.data.labels))
        return model, preds, info | more

    def job(self, arm: str, size, seed: int):
        """(model or None, the result event, the per-test-example counts for the intervals)."""
        t0, c0 = time.time(), time.process_time()
        model, preds, info = self._run(arm, size, seed)
        u = units(preds, self.golds, self.task.kind, self.data.majority)
        answers = {p for row in preds for p in ([row] if self.task.kind == "sequence" else row)}
        result = {"event": "result", "arm": arm, "size": size, "seed": seed, "metric": self.metric,
                  "score": score(u, self.metric), "accuracy": score(u, "accuracy"),
                  **({"f1": score(u, "f1")} if self.metric == "f1" else {}),
                  "same_answer": len(answers) == 1, "n_test": len(self.data.test), **info,
                  "seconds": round(time.time() - t0, 3), "cpu_seconds": round(time.process_time() - c0, 3)}
        return model, result, u

    def zero_label(self) -> bool:
        """Does the readout have a zero-label rule here (size 0)? (from the declaration: nothing computed;
        the vocabulary's own rule, which the page's plan uses too)"""
        from app.contract.readouts import zero_label

        return zero_label(self.task.meta.get("readout"), self.task.kind)

    def rebuild(self, result: dict, state: dict):
        """A worker's fine-tuned model from its weights (training/finetune/pool.py), for export."""
        model = build_classifier(result["arm"], self.bert, len(self.data.labels), self.data.kind, result["seed"],
                                 small="smaller" in result.get("model", ""))
        model.load_state_dict(state)
        return model.eval()

    def base_model(self) -> dict:
        set_file = self.folder / "set.json"
        info = json.loads(set_file.read_text(encoding="utf-8")) if set_file.exists() else {}
        return {"folder": str(self.folder), "set_id": info.get("id"), "set_name": info.get("name"),
                "parameters": sum(p.numel() for p in self.bert.transformer.parameters())}

    def export(self, model, result: dict, out: Path) -> dict:
        from .export import export_classifier

        t0 = time.time()
        arm = result["arm"]
        unit = "examples" if self.task.kind == "sequence" else "characters"
        card = {"task": self.task.name, "kind": self.task.kind, "labels": self.task.labels,
                "task_description": self.task.meta.get("description"), "task_provenance": self.task.meta.get("provenance"),
                "base_model": self.base_model(), "examples": result["examples"], "size": result["size"],
                "seed": result["seed"],
                "held_out": {"accuracy": result["accuracy"], "metric": self.metric, "score": result["score"],
                             "n_test": result["n_test"], "unit": unit},
                "training": {"arm": arm, "how": self.how(), "steps": result.get("steps"),
                             "what_trains": WHAT_TRAINS[arm]}}
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{Path(out).name}.{arm}").strip("-.")[:64] or arm
        export_classifier(model, out, arm, card, self.folder / "vocab.json", slug,
                          f"{self.task.name}: {arm} ({result['examples']} examples)", self.cache, self.tracer)
        return {"event": "classifier", "arm": arm, "dir": f"classifiers/{arm}", "accuracy": result["accuracy"],
                "score": result["score"], "seconds": round(time.time() - t0, 3)}

    def gpt_way(self) -> dict:
        from .gpt import gpt_way

        return gpt_way(self.folder, self.task, self.threads)

