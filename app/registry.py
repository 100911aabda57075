"""The model registry: every model set the server can serve, by a short id.

A model set is a folder (app/contract/). The shipped one (`--models-dir`, id "shakespeare") is
loaded at startup and kept. Sets given with `--extra-models` are checked at startup; sets added
while running (finished training runs and their snapshots) are listed at once and loaded on first
use. At most `max_loaded` sets besides the default stay in memory (least recently used first
out), so a worker's memory does not grow with the number of runs; what a load found is remembered
for /api/health after the set leaves memory.

Loading checks the whole contract and degrades instead of failing later: a part that fails a
check (a graph whose names or shapes disagree with its card, a card that disagrees with the
vocabulary, a quiz item without a truth) is not served, and /api/health says which and why.
"""
from __future__ import annotations

import importlib
import json
import logging
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from .contract import (FAMILIES, OPTIONAL_PARTS, PARTS, SET_ID_PATTERN, SPECS, Vocab, check_classifier, check_graph,
                       check_quiz, read_examples)
from .errors import ApiError
from .runtime import Runtime
from .tasks.classifier import Classifier

log = logging.getLogger("app")
NAMES = {**{n: s.card_label or s.label for n, s in SPECS.items()}, "classifier": "fine-tuned classifier"}


def task_class(family: str):
    """The class that serves a family's graph, as its spec names it (app/tasks/<name>.py)."""
    module, _, name = SPECS[family].task.partition(":")
    return getattr(importlib.import_module(module), name)


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
    kind: str = "extra"  # shipped | extra | run | snapshot | classifier
    run: str | None = None
    step: int | None = None
    cards: dict = field(default_factory=dict)
    families: list[str] = field(default_factory=list)  # those with files in the folder
    checked: dict | None = None  # {"status", "problems"} of the last load, kept after eviction
    examples: dict | None = None  # lines of its own held-out text (examples.json, app/contract/examples.py)

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
    for fam in PARTS:
        try:
            card = read_json(folder / f"{fam}.card.json")
            if isinstance(card, dict):
                cards[fam] = card
        except (OSError, ValueError):
            pass
    families = [f for f in PARTS if (folder / f"{f}.onnx").exists() or f in cards]
    if not id:
        id = declared.get("id") if isinstance(declared.get("id"), str) else None
        if id and not re.match(SET_ID_PATTERN, id):
            log.warning("model set %s: set.json id %r is not a short name; using the folder's name", folder, id)
            id = None
        id = id or slug(folder.name)
    name = name or (declared.get("name") if isinstance(declared.get("name"), str) else None) or id
    extra["examples"] = read_examples(folder) or extra.get("examples")
    return SetMeta(id=id, folder=folder, name=name, cards=cards, families=families, **extra)


class ModelSet:
    """One loaded set: vocabulary, one task per part it serves (an attribute named by the part:
    `s.gpt`, `s.bert`, ... or None), cards, quiz bank, and what failed."""

    def __init__(self, meta: SetMeta):
        self.meta, self.id = meta, meta.id
        self.vocab: Vocab | None = None
        for part in PARTS:  # every family of the contract, and a fine-tune's classifier
            setattr(self, part, None)
        self.cards: dict = {}
        self.quiz: list[dict] | None = None
        self.problems: list[str] = []
        # What the lesson views derive from this set (inspection graphs, seeded recovery figures):
        # kept here, so a reloaded or evicted set takes its entries with it.
        self._memo: dict[str, OrderedDict] = {}
        self._memo_lock = threading.Lock()

    def memo(self, area: str, key, compute, keep: int = 32):
        """compute() once per (area, key) for this set; at most `keep` entries per area (oldest go
        first). compute runs outside the lock: two first callers may both compute, one result stays."""
        with self._memo_lock:
            found = self._memo.setdefault(area, OrderedDict()).get(key)
        if found is not None:
            return found
        out = compute()
        with self._memo_lock:
            entries = self._memo.setdefault(area, OrderedDict())
            out = entries.setdefault(key, out)
            while len(entries) > keep:
                entries.popitem(last=False)
        return out

    @classmethod
    def load(cls, meta: SetMeta, runtime: Runtime) -> "ModelSet":
        s, folder = cls(meta), meta.folder

        def problem(text: str) -> None:
            # Clients read these (/api/health): file names only, never the server's paths.
            s.problems.append(text.replace(str(folder.resolve()) + "/", "").replace(str(folder) + "/", ""))

        try:
            s.vocab = Vocab.load(folder / "vocab.json")
        except FileNotFoundError:
            problem("vocab.json is missing (so neither model is served)")
        except (OSError, ValueError, KeyError, TypeError) as e:
            problem(f"vocab.json: {e} (so neither model is served)")
        for fam in PARTS:
            files = [folder / f"{fam}.card.json", folder / f"{fam}.onnx"]
            missing = [f.name for f in files if not f.is_file()]
            if len(missing) == 2 and (fam in OPTIONAL_PARTS or meta.families and fam not in meta.families):
                continue  # a set trained without this family: a 409 says so, no problem
            if missing:
                problem(f"{fam}: {' and '.join(missing)} missing")
                continue
            try:
                card = read_json(files[0])
                if not isinstance(card, dict) or fam in FAMILIES and not isinstance(card.get("config"), dict):
                    raise ValueError("the card is not an object with a config")
                s.cards[fam] = card
                if s.vocab is None:
                    continue
                session = runtime.session(files[1])
                if fam == "classifier":
                    check_classifier(session, card, s.vocab.size)
                    task = Classifier(session, s.vocab, card, runtime.gate)
                else:
                    check_graph(fam, session, card["config"], s.vocab.size)
                    task = task_class(fam)(session, s.vocab, card["config"], runtime.gate)
                task.smoke_test()  # one run at each end of the context, at load, not on every request
                setattr(s, fam, task)
            except Exception as e:  # noqa: BLE001 - any broken file leaves that model unserved
                problem(f"{fam}: {e}")
        try:
            items = read_json(folder / "nsp_quiz.json")
            s.quiz = check_quiz(items.get("items") if isinstance(items, dict) else None,
                                s.bert.context if s.bert is not None else None)
        except FileNotFoundError:
            pass  # a set without a quiz bank: the quiz says so
        except (OSError, ValueError, TypeError) as e:
            problem(f"nsp_quiz.json: {e}")
        meta.checked = {"status": s.status, "problems": list(s.problems)}
        return s

    @property
    def status(self) -> str:
        if all(getattr(self, part) is None for part in PARTS if part not in OPTIONAL_PARTS or part == "classifier"):
            return "failed"  # an optional family alone (ELECTRA without GPT or BERT) is nothing to play with
        return "degraded" if self.problems else "ok"


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
            run: str | None = None, step: int | None = None, pin: bool = False, default: bool = False,
            examples: dict | None = None) -> str:
        meta = read_meta(Path(folder), id, name, kind=kind, run=run, step=step, examples=examples)
        if not re.match(SET_ID_PATTERN, meta.id):
            raise ValueError(f"model set id {meta.id!r} is not a short name ({SET_ID_PATTERN})")
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
            if id == self.default_id:
                raise ValueError("the default model set cannot be dropped")
            self._metas.pop(id, None)
            self._loaded.pop(id, None)
            self._pinned.pop(id, None)
            self._loading.pop(id, None)

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
                found = self._pinned.get(meta.id) or self._loaded.get(meta.id)
                if meta.id in self._loaded:
                    self._loaded.move_to_end(meta.id)
            if found is not None:
                return found
            loaded = ModelSet.load(meta, self.runtime)
            for problem in loaded.problems:
                log.warning("model set %s (%s): %s", meta.id, meta.folder, problem)
            with self._lock:
                if self._metas.get(meta.id) is meta:  # not dropped (or replaced) meanwhile
                    self._loaded[meta.id] = loaded
                    while len(self._loaded) > self.max_loaded:
                        self._loaded.popitem(last=False)
            return loaded

    def task(self, family: str, id: str | None = None):
        """The set's model of this family (gpt, bert, electra, classifier): 409 naming `model` when
        the set has none, 503 when it failed."""
        s = self.get(id)
        task = getattr(s, family)
        if task is not None:
            return task
        label = NAMES[family]
        if family not in s.meta.families and any(getattr(s, f) for f in NAMES):
            raise ApiError(f"model set {s.id!r} has no {label} (it was trained without one); pick a set "
                           f"with a {label} in the model list", "model", status=409)
        raise ApiError(f"the {label} model of set {s.id!r} is not loaded on this server (see /api/health)",
                       "model", status=503)

    def __getattr__(self, part: str):
        """registry.gpt(id), registry.bert(id), ...: the set's task of that part (self.task)."""
        if part in PARTS:
            return lambda id=None: self.task(part, id)
        raise AttributeError(part)

    @property
    def default(self) -> ModelSet:
        return self.get(None)

    # ---- reporting ----
    def loaded_sets(self) -> list[ModelSet]:
        with self._lock:
            return list(self._pinned.values()) + list(self._loaded.values())

    def info(self, meta: SetMeta, loaded: ModelSet | None) -> dict:
        checked = meta.checked or {"status": "not loaded", "problems": []}
        return {**meta.info(), **checked, "cards": loaded.cards if loaded else meta.cards}

    def list(self) -> list[dict]:
        with self._lock:
            metas = list(self._metas.values())
            loaded = {s.id: s for s in [*self._pinned.values(), *self._loaded.values()]}
        return [self.info(m, loaded.get(m.id)) for m in metas]

    def health(self) -> dict:
        """Every set that was ever loaded (what its last load found): ok when all passed."""
        with self._lock:
            sets = {m.id: dict(m.checked) for m in self._metas.values() if m.checked}
        return {"ok": bool(sets) and all(v["status"] == "ok" for v in sets.values()), "sets": sets}
