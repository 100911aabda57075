"""The model registry: every model set the server can serve, by a short id.

A model set is a folder (app/contract.py). The shipped one (`--models-dir`, id "shakespeare") is
loaded at startup and kept; others (`--extra-models`, finished training runs and their
snapshots) are listed at once but loaded on first use, and at most `max_loaded` of them stay in
memory (least recently used first out), so a worker's memory does not grow with the number of runs.

Loading checks the whole contract and degrades instead of failing later: a part that fails a
check (a graph whose names or shapes disagree with its card, a card that disagrees with the
vocabulary, a quiz item without a truth) is not served, and /api/health says which and why.
"""
from __future__ import annotations

import json
import logging
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .contract import BERT_INPUTS, FAMILIES, Vocab, cache_names, cache_shape, check_graph, check_quiz
from .errors import ApiError
from .runtime import Runtime
from .tasks.bert import BERT
from .tasks.gpt import GPT

log = logging.getLogger("app")
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$"
NAMES = {"gpt": "GPT", "bert": "BERT"}


def slug(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")[:64]
    return s or "models"


def read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


@dataclass
class SetMeta:
    """What the registry knows of a set without loading it."""

    id: str
    folder: Path
    name: str
    kind: str = "extra"  # shipped | extra | run | snapshot
    run: str | None = None
    step: int | None = None
    cards: dict = field(default_factory=dict)
    families: list[str] = field(default_factory=list)  # those with files in the folder

    def info(self) -> dict:
        return {"id": self.id, "name": self.name, "kind": self.kind, "run": self.run, "step": self.step,
                "families": self.families, "cards": self.cards}


def read_meta(folder: Path, id: str | None = None, name: str | None = None, **extra) -> SetMeta:
    folder = Path(folder)
    declared = {}
    try:
        declared = read_json(folder / "set.json")
    except (OSError, ValueError):
        pass
    cards = {}
    for fam in FAMILIES:
        try:
            card = read_json(folder / f"{fam}.card.json")
            if isinstance(card, dict):
                cards[fam] = card
        except (OSError, ValueError):
            pass
    families = [f for f in FAMILIES if (folder / f"{f}.onnx").exists() or f in cards]
    id = id or (declared.get("id") if isinstance(declared.get("id"), str) else None) or slug(folder.name)
    name = name or (declared.get("name") if isinstance(declared.get("name"), str) else None) or id
    return SetMeta(id=id, folder=folder, name=name, cards=cards, families=families, **extra)


class ModelSet:
    """One loaded set: vocabulary, the GPT and BERT tasks, cards, quiz bank, and what failed."""

    def __init__(self, meta: SetMeta):
        self.meta, self.id = meta, meta.id
        self.vocab: Vocab | None = None
        self.gpt: GPT | None = None
        self.bert: BERT | None = None
        self.cards: dict = {}
        self.quiz: list[dict] | None = None
        self.problems: list[str] = []

    @classmethod
    def load(cls, meta: SetMeta, runtime: Runtime) -> "ModelSet":
        s, folder = cls(meta), meta.folder
        try:
            s.vocab = Vocab.load(folder / "vocab.json")
        except (OSError, ValueError, KeyError, TypeError) as e:
            s.problems.append(f"vocab.json: {e} (so neither model is served)")
        for fam in FAMILIES:
            try:
                card = read_json(folder / f"{fam}.card.json")
                s.cards[fam] = card
                if s.vocab is None:
                    continue
                config = card.get("config") if isinstance(card, dict) else None
                if not isinstance(config, dict):
                    raise ValueError("the card has no config")
                session = runtime.session(folder / f"{fam}.onnx")
                check_graph(fam, session, config, s.vocab.size)
                task = (GPT if fam == "gpt" else BERT)(session, s.vocab, config, runtime.gate)
                smoke_test(fam, task)
                setattr(s, fam, task)
            except FileNotFoundError as e:
                if fam in meta.families:
                    s.problems.append(f"{fam}: {Path(e.filename or '').name or e} is missing")
                elif not meta.families:
                    s.problems.append(f"{fam}: no {fam}.onnx / {fam}.card.json in the folder")
            except Exception as e:  # noqa: BLE001 - any broken file leaves that model unserved
                s.problems.append(f"{fam}: {e}")
        try:
            items = read_json(folder / "nsp_quiz.json")
            s.quiz = check_quiz(items.get("items") if isinstance(items, dict) else None,
                                s.bert.context if s.bert is not None else None)
        except FileNotFoundError:
            pass  # a set without a quiz bank: the quiz says so
        except (OSError, ValueError, TypeError) as e:
            s.problems.append(f"nsp_quiz.json: {e}")
        return s

    @property
    def status(self) -> str:
        if self.gpt is None and self.bert is None:
            return "failed"
        return "degraded" if self.problems else "ok"


def smoke_test(family: str, task) -> None:
    """One run at length 1 and one at the full context: a card whose context disagrees with the
    graph (position table too short) fails here, at load, instead of on every request."""
    for n in sorted({1, task.context}):
        ids = np.full(n, 5, dtype=np.int64)
        if family == "gpt":
            out = task.logits(ids)
        else:
            out, _ = task.forward(ids.tolist())
        if out.shape[0] != n or not np.isfinite(out).all():
            raise ValueError(f"{family}.onnx gave no finite logits at length {n}")


class Registry:
    def __init__(self, runtime: Runtime, max_loaded: int = 6):
        self.runtime, self.max_loaded = runtime, max_loaded
        self._lock = threading.RLock()
        self._metas: dict[str, SetMeta] = {}
        self._loaded: OrderedDict[str, ModelSet] = OrderedDict()  # lazily loaded, most recent last
        self._pinned: dict[str, ModelSet] = {}
        self._loading: dict[str, threading.Lock] = {}
        self.default_id: str | None = None

    # ---- adding and dropping ----
    def add(self, folder: Path, id: str | None = None, name: str | None = None, kind: str = "extra",
            run: str | None = None, step: int | None = None, pin: bool = False, default: bool = False) -> str:
        meta = read_meta(Path(folder), id, name, kind=kind, run=run, step=step)
        if not re.match(ID_PATTERN, meta.id):
            raise ValueError(f"model set id {meta.id!r} is not a short name ({ID_PATTERN})")
        with self._lock:
            if meta.id in self._metas and self._metas[meta.id].folder.resolve() != meta.folder.resolve():
                base, k = meta.id, 2
                while f"{base}-{k}" in self._metas:
                    k += 1
                meta.id = f"{base}-{k}"
            self._metas[meta.id] = meta
            self._loaded.pop(meta.id, None)
            if default or self.default_id is None:
                self.default_id = meta.id
        if pin:
            loaded = ModelSet.load(meta, self.runtime)
            for problem in loaded.problems:
                log.warning("model set %s (%s): %s", meta.id, meta.folder, problem)
            with self._lock:
                self._pinned[meta.id] = loaded
        return meta.id

    def drop(self, id: str) -> None:
        with self._lock:
            self._metas.pop(id, None)
            self._loaded.pop(id, None)
            self._pinned.pop(id, None)

    # ---- looking up ----
    def ids(self) -> list[str]:
        with self._lock:
            return list(self._metas)

    def meta(self, id: str | None) -> SetMeta:
        with self._lock:
            key = id or self.default_id
            meta = self._metas.get(key) if key else None
        if meta is None:
            known = ", ".join(self.ids()[:10]) or "none"
            raise ApiError(f"no model set called {id!r} on this server (GET /api/models lists them: {known})",
                           "model", status=404)
        return meta

    def get(self, id: str | None = None) -> ModelSet:
        """The set (loading it on first use); 404 naming `model` when unknown."""
        meta = self.meta(id)
        with self._lock:
            found = self._pinned.get(meta.id) or self._loaded.get(meta.id)
            if found is not None:
                if meta.id in self._loaded:
                    self._loaded.move_to_end(meta.id)
                return found
            gate = self._loading.setdefault(meta.id, threading.Lock())
        with gate:  # one load per set, even when a class asks for it at once
            with self._lock:
                found = self._loaded.get(meta.id)
            if found is not None:
                return found
            loaded = ModelSet.load(meta, self.runtime)
            for problem in loaded.problems:
                log.warning("model set %s (%s): %s", meta.id, meta.folder, problem)
            with self._lock:
                if meta.id in self._metas:  # not dropped meanwhile
                    self._loaded[meta.id] = loaded
                    while len(self._loaded) > self.max_loaded:
                        self._loaded.popitem(last=False)
            return loaded

    def task(self, family: str, id: str | None = None):
        """The set's GPT or BERT: 409 naming `model` when the set has none, 503 when it failed."""
        s = self.get(id)
        task = getattr(s, family)
        if task is not None:
            return task
        label = NAMES[family]
        if family not in s.meta.families and (s.gpt or s.bert):
            raise ApiError(f"model set {s.id!r} has no {label} (it was trained without one); pick a set "
                           f"with a {label} in the model list", "model", status=409)
        raise ApiError(f"the {label} model of set {s.id!r} is not loaded on this server (see /api/health)",
                       None, status=503)

    def gpt(self, id: str | None = None) -> GPT:
        return self.task("gpt", id)

    def bert(self, id: str | None = None) -> BERT:
        return self.task("bert", id)

    @property
    def default(self) -> ModelSet:
        return self.get(None)

    # ---- reporting ----
    def loaded_sets(self) -> list[ModelSet]:
        with self._lock:
            return list(self._pinned.values()) + list(self._loaded.values())

    def list(self) -> list[dict]:
        with self._lock:
            metas = list(self._metas.values())
            loaded = {s.id: s for s in [*self._pinned.values(), *self._loaded.values()]}
        out = []
        for m in metas:
            s = loaded.get(m.id)
            out.append({**m.info(), "status": s.status if s else "not loaded",
                        "problems": s.problems if s else []})
        return out

    def health(self) -> dict:
        sets = {s.id: {"status": s.status, "problems": s.problems} for s in self.loaded_sets()}
        return {"ok": all(v["status"] == "ok" for v in sets.values()) and bool(sets), "sets": sets}
