"""One model set + one task: the fine-tunes, exports and GPT's way that training/finetune.py's
command line asks for, each returning the JSON event it prints."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

from app.contract.task_format import Task

from .finetune_loop import FinetuneConfig, ProbeFeatures, TaskData, finetune_one, steps_note
from .finetune_model import build_classifier
from .inspect_export import model_from_onnx
from .tokenizer import CharTokenizer


class Lab:
    def __init__(self, folder: Path, task: Task, steps: int | None = None, threads: int = 1):
        self.folder, self.task, self.threads = Path(folder), task, threads
        if not (self.folder / "bert.onnx").exists():
            raise FileNotFoundError(f"--model: {folder} has no bert.onnx")
        self.bert, _ = model_from_onnx(self.folder, "bert")  # weights read back out of bert.onnx, checked
        self.tok = CharTokenizer.load(self.folder / "vocab.json")
        self.data = TaskData(task, self.tok.stoi, self.bert.cfg.context)
        self.cfg = FinetuneConfig() if steps is None else FinetuneConfig(steps=steps)
        self._probe: ProbeFeatures | None = None
        self.cache, self.tracer = None, None

    def prepare_export(self, out: Path) -> None:
        """Start tracing the classifier graph in the background (training/finetune_export.py)."""
        from .finetune_export import start_tracer

        self.cache = Path(out) / ".cache"
        self.tracer = start_tracer(self.cache, self.bert.cfg.to_dict(), self.task.kind, len(self.task.labels))

    def how(self) -> str:
        return steps_note(self.cfg)

    def finish_export(self) -> None:
        """The tracer is done with; its template cache goes (each job's folder keeps only results)."""
        import shutil

        if self.tracer is not None:
            self.tracer.wait()
        if self.cache is not None:
            shutil.rmtree(self.cache, ignore_errors=True)

    def probe_features(self) -> ProbeFeatures:
        if self._probe is None:
            frozen = build_classifier("probe", self.bert, len(self.data.labels), self.data.kind, 0)
            self._probe = ProbeFeatures(frozen, self.data, self.cfg.eval_batch)
        return self._probe

    def job(self, arm: str, size, seed: int):
        t0, c0 = time.time(), time.process_time()
        feats = self.probe_features() if arm == "probe" else None
        model, acc, used = finetune_one(self.bert, self.data, arm, None if size == "all" else size, seed, self.cfg, feats)
        return model, {"event": "result", "arm": arm, "size": size, "seed": seed, "accuracy": acc,
                       "n_test": len(self.data.test), "examples": used,
                       "seconds": round(time.time() - t0, 3), "cpu_seconds": round(time.process_time() - c0, 3)}

    def base_model(self) -> dict:
        set_file = self.folder / "set.json"
        info = json.loads(set_file.read_text(encoding="utf-8")) if set_file.exists() else {}
        return {"folder": str(self.folder), "set_id": info.get("id"), "set_name": info.get("name"),
                "parameters": sum(p.numel() for p in self.bert.transformer.parameters())}

    def export(self, model, result: dict, out: Path) -> dict:
        from .finetune_export import export_classifier

        t0 = time.time()
        arm = result["arm"]
        unit = "examples" if self.task.kind == "sequence" else "characters"
        card = {"task": self.task.name, "kind": self.task.kind, "labels": self.task.labels,
                "task_description": self.task.meta.get("description"), "task_provenance": self.task.meta.get("provenance"),
                "base_model": self.base_model(), "examples": result["examples"], "size": result["size"],
                "seed": result["seed"],
                "held_out": {"accuracy": result["accuracy"], "n_test": result["n_test"], "unit": unit},
                "training": {"arm": arm, "how": self.how(), "steps": self.cfg.steps,
                             "what_trains": {"full": "every weight (pretrained start)", "probe": "the head only (pretrained encoder frozen)",
                                             "scratch": "every weight (random start, no pretraining)"}[arm]}}
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{Path(out).name}.{arm}").strip("-.")[:64] or arm
        export_classifier(model, out, arm, card, self.folder / "vocab.json", slug,
                          f"{self.task.name}: {arm} ({result['examples']} examples)", self.cache, self.tracer)
        return {"event": "classifier", "arm": arm, "dir": f"classifiers/{arm}", "accuracy": result["accuracy"],
                "seconds": round(time.time() - t0, 3)}

    def gpt_way(self) -> dict:
        from .finetune_gpt import gpt_way

        return gpt_way(self.folder, self.task, self.threads)
