"""Inference with numpy and onnxruntime only (the server installs without torch).

What lives here: the vocabulary reader, the KV-cached GPT sampler (drawing with the rule in
app/sampling.py) and BERT's mask-fill / corruption / next-sentence prediction.
Nothing here knows about HTTP; bad input is reported with `BadInput` so the routers can turn it
into a 4xx naming the parameter.
"""
from __future__ import annotations

import json
import os
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort

from .sampling import Distribution, draw, sampling_distribution, softmax

SPECIALS = ["[PAD]", "[UNK]", "[MASK]", "[CLS]", "[SEP]"]
PAD, UNK, MASK, CLS, SEP = range(len(SPECIALS))
FIRST_CHAR = len(SPECIALS)  # ids below this are special tokens: never predicted, never sampled
MASK_MARKER = "[MASK]"


class BadInput(ValueError):
    """Input the models cannot take; routers answer it with `status` and the parameter's name."""

    def __init__(self, detail: str, parameter: str | None = None, status: int = 422):
        super().__init__(detail)
        self.detail, self.parameter, self.status = detail, parameter, status


class Vocab:
    """Character vocabulary: token id = index in specials + chars (the format of vocab.json)."""

    def __init__(self, chars: list[str]):
        self.chars = list(chars)
        self.itos = SPECIALS + self.chars
        self.stoi = {ch: i for i, ch in enumerate(self.itos) if i >= FIRST_CHAR}
        self.size = len(self.itos)

    @classmethod
    def load(cls, path: Path) -> "Vocab":
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("specials") != SPECIALS:
            raise ValueError("vocab.json has unexpected special tokens")
        return cls(data["chars"])

    def encode(self, text: str, offset: int = 0) -> tuple[list[int], list[dict]]:
        """Ids for `text`, plus the characters that fell back to [UNK] (positions start at offset)."""
        ids, unknown = [], []
        for i, ch in enumerate(text):
            tid = self.stoi.get(ch, UNK)
            if tid == UNK:
                unknown.append({"position": offset + i, "char": ch})
            ids.append(tid)
        return ids, unknown

    def token(self, tid: int) -> str:
        return self.itos[tid]


_ARENA_LOCK = threading.Lock()
_arena: bool | None = None  # None: not tried yet


def shared_cpu_arena() -> bool:
    """Register one CPU arena for all sessions of this process (True if it is there). Per-session
    arenas each keep their own peak, and grow in powers of two (a 5 MB need can reserve 8 MB)."""
    global _arena
    with _ARENA_LOCK:
        if _arena is None:
            try:
                info = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
                # max_mem 0 = no limit; extend strategy 1 = kSameAsRequested; defaults for the rest.
                ort.create_and_register_allocator(info, ort.OrtArenaCfg(0, 1, -1, -1))
                _arena = True
            except Exception:  # noqa: BLE001 - an onnxruntime without it: per-session arenas
                _arena = False
        return _arena


def make_session(path: Path, threads: int) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.intra_op_num_threads = max(1, threads)
    so.inter_op_num_threads = 1
    # Spinning worker threads would steal the few cores from other requests' threads.
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if shared_cpu_arena():
        so.add_session_config_entry("session.use_env_allocators", "1")
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


class FairGate:
    """A counting semaphore that admits waiting threads strictly in arrival order.

    threading.Semaphore lets a newly arriving thread take a freed slot before the woken waiter,
    which then queues again at the back: under load that shows up as a long latency tail. Here
    a freed slot is handed straight to the oldest waiter."""

    def __init__(self, slots: int):
        self._lock = threading.Lock()
        self._free = slots
        self._waiters: deque[threading.Lock] = deque()

    def __enter__(self) -> None:
        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                return
            baton = threading.Lock()
            baton.acquire()
            self._waiters.append(baton)
        baton.acquire()  # released by __exit__ of the run that hands us its slot

    def __exit__(self, *exc) -> None:
        with self._lock:
            if self._waiters:
                self._waiters.popleft().release()
            else:
                self._free += 1


def default_parallel_runs(threads: int) -> int:
    """As many concurrent model runs as there are cores for them (each uses `threads`)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, cores // max(1, threads))


@dataclass
class Step:
    """One generated character: its id, the distribution it was drawn from, and (for tests and
    the benchmark) the full logits and where the visible window started in prompt + generated."""

    token: int
    dist: Distribution
    logits: np.ndarray
    window_start: int


def cache_input_names(n_layer: int) -> list[str]:
    """gpt.onnx's cache inputs, in the order its present_* outputs come back (see training/export.py)."""
    return [f"past_{kind}_{i}" for i in range(n_layer) for kind in ("key", "value")]


class CacheBinding:
    """One generation's KV cache: a fixed buffer per layer and kind, bound (onnxruntime IOBinding)
    both as gpt.onnx's past_* input and as its present_* output, so a step writes the new
    character's keys and values in place instead of copying the whole cache. The logits are
    bound to a buffer of ours too, so a step allocates nothing."""

    def __init__(self, gpt: "GPT"):
        self.gpt = gpt
        shape = [1, gpt.n_head, gpt.context, gpt.head_size]
        self.buffers = [np.zeros(shape, dtype=np.float32) for _ in gpt.cache_names]
        self.io = gpt.session.io_binding()
        for name, buf in zip(gpt.cache_names, self.buffers):
            self.io.bind_input(name, "cpu", 0, np.float32, shape, buf.ctypes.data)
            self.io.bind_output(name.replace("past_", "present_", 1), "cpu", 0, np.float32, shape, buf.ctypes.data)
        self.logits = np.empty((1, 0, gpt.vocab.size), dtype=np.float32)
        self.past_length = np.zeros((), dtype=np.int64)
        self.io.bind_cpu_input("past_length", self.past_length)
        self.ids = np.empty((1, 0), dtype=np.int64)

    def run(self, ids: list[int], start: int) -> np.ndarray:
        """Logits (seq, vocab) for `ids` at positions start.., after `start` cached characters.
        The array is reused by the next run: copy what must outlive it."""
        if len(ids) != self.ids.shape[1]:  # a new length (prefill vs step): new buffers to bind
            self.ids = np.empty((1, len(ids)), dtype=np.int64)
            self.logits = np.empty((1, len(ids), self.gpt.vocab.size), dtype=np.float32)
            self.io.bind_cpu_input("input_ids", self.ids)
            self.io.bind_output("logits", "cpu", 0, np.float32, list(self.logits.shape), self.logits.ctypes.data)
        self.ids[0] = ids
        self.past_length[()] = start
        with self.gpt.gate:
            self.gpt.session.run_with_iobinding(self.io)
        return self.logits[0]


class GPT:
    def __init__(self, session: ort.InferenceSession, vocab: Vocab, config: dict, gate=None):
        self.session, self.vocab, self.config = session, vocab, config
        self.gate = gate or nullcontext()
        self.context = int(config["context"])
        n_layer, self.n_head = int(config["n_layer"]), int(config["n_head"])
        self.head_size = int(config["n_embd"]) // self.n_head
        self.cache_names = cache_input_names(n_layer)
        # One read-only empty cache serves every full forward (past_length 0: nothing is read from it).
        empty = np.zeros((1, self.n_head, self.context, self.head_size), dtype=np.float32)
        self._empty = dict.fromkeys(self.cache_names, empty)

    def logits(self, ids: list[int] | np.ndarray) -> np.ndarray:
        """Logits (seq, vocab) of one full forward over `ids` (at most `context` of them)."""
        ids = np.asarray(ids, dtype=np.int64).reshape(1, -1)
        if ids.shape[1] > self.context:  # the graph does not check this itself
            raise ValueError("GPT input past the context")
        with self.gate:
            logits = self.session.run(["logits"], {"input_ids": ids, "past_length": np.array(0, dtype=np.int64),
                                                   **self._empty})[0]
        return logits[0]

    def next_logits(self, ids: list[int]) -> tuple[np.ndarray, int]:
        """Logits for the character after `ids`, from the last `context` of them; and how many."""
        window = ids[-self.context:]
        return self.logits(window)[-1], len(window)

    def step(self, cache: CacheBinding, ids: list[int], start: int) -> np.ndarray:
        """One cached run of `ids` after the `start` characters in `cache`: the logits (vocab,)
        for the character that follows them (a copy: the binding reuses its buffer)."""
        if start + len(ids) > self.context:
            raise ValueError("GPT input past the context")
        return cache.run(ids, start)[-1].copy()

    def generate(self, ids: list[int], max_new: int, temperature: float, top_k: int, top_p: float,
                 seed: int) -> Iterator[Step]:
        """Sample max_new characters after `ids`, one cached step each.

        The prompt (its last `context` characters) is prefilled once; each new character is one
        forward of length 1 at its absolute position. Positions are learned and absolute, so a
        full cache cannot slide: we re-prefill from the last context/2 characters and go on."""
        rng = np.random.default_rng(seed)
        cache = CacheBinding(self)
        seq = list(ids[-self.context:])
        offset = len(ids) - len(seq)  # window start, as an index into prompt + generated
        logits = self.step(cache, seq, 0)
        for i in range(max_new):
            dist = sampling_distribution(logits[FIRST_CHAR:], temperature, top_k, top_p)
            token = FIRST_CHAR + draw(dist, rng)
            yield Step(token, dist, logits, offset)
            if i == max_new - 1:
                break
            seq.append(token)
            if len(seq) > self.context:
                keep = self.context // 2
                offset += len(seq) - keep
                seq = seq[-keep:]
                logits = self.step(cache, seq, 0)
            else:
                logits = self.step(cache, seq[-1:], len(seq) - 1)


class BERT:
    def __init__(self, session: ort.InferenceSession, vocab: Vocab, config: dict, gate=None):
        self.session, self.vocab = session, vocab
        self.gate = gate or nullcontext()
        self.context = int(config["context"])

    def forward(self, ids: list[int], types: list[int] | None = None):
        ids_a = np.asarray(ids, dtype=np.int64).reshape(1, -1)
        types_a = np.zeros_like(ids_a) if types is None else np.asarray(types, dtype=np.int64).reshape(1, -1)
        with self.gate:
            mlm, nsp = self.session.run(None, {"input_ids": ids_a, "token_type_ids": types_a})
        return mlm[0], nsp[0]

    def char_probs(self, ids: list[int], rows: list[int]) -> np.ndarray:
        """[CLS] ids [SEP] -> (len(rows), n_chars): probabilities over the ordinary characters at
        the positions `rows` of ids (only those: the softmax of every row costs as much again
        as the rest of a request's Python work)."""
        mlm, _ = self.forward([CLS, *ids, SEP])
        return softmax(mlm[np.asarray(rows, dtype=np.int64) + 1, FIRST_CHAR:])

    def ranked(self, probs: np.ndarray, n: int) -> list[dict]:
        n = max(1, min(n, len(probs)))
        idx = np.argpartition(-probs, n - 1)[:n] if n < len(probs) else np.arange(len(probs))
        idx = idx[np.argsort(-probs[idx], kind="stable")]
        return [{"char": self.vocab.chars[i], "prob": float(probs[i])} for i in idx]

    def fill(self, ids: list[int], masks: list[int], top_k: int, originals: list[int] | None = None) -> list[dict]:
        """Predictions at each mask position of `ids` (which already hold [MASK] there)."""
        probs = self.char_probs(ids, masks)
        out = []
        for j, pos in enumerate(masks):
            p = probs[j]
            entry = {"position": pos, "predictions": self.ranked(p, top_k), "original": None}
            if originals is not None and originals[j] >= FIRST_CHAR:
                po = float(p[originals[j] - FIRST_CHAR])
                entry["original"] = {"char": self.vocab.token(originals[j]), "prob": po,
                                     "rank": int((p > po).sum()) + 1}
            out.append(entry)
        return out

    def corrupt(self, ids: list[int], mask_rate: float, seed: int) -> dict:
        """BERT's pretraining corruption on one text, then one forward on what it produced."""
        rng = np.random.default_rng(seed)
        arr = np.asarray(ids, dtype=np.int64)
        n = len(arr)
        # Vectorised draws in a fixed order, so a seed always gives the same corruption.
        selected = (rng.random(n) < mask_rate) & (arr >= FIRST_CHAR)
        r = rng.random(n)
        randoms = rng.integers(FIRST_CHAR, self.vocab.size, n)
        corrupted = arr.copy()
        corrupted[selected & (r < 0.8)] = MASK
        to_random = selected & (r >= 0.8) & (r < 0.9)
        corrupted[to_random] = randoms[to_random]
        chosen = np.flatnonzero(selected)
        probs = self.char_probs(corrupted.tolist(), chosen.tolist())
        rows = []
        for j, pos in enumerate(chosen):
            p = probs[j]
            best = int(np.argmax(p))
            action = "mask" if r[pos] < 0.8 else "random" if r[pos] < 0.9 else "unchanged"
            rows.append({"position": int(pos), "original": self.vocab.token(int(arr[pos])), "action": action,
                         "shown": self.vocab.token(int(corrupted[pos])), "prediction": self.vocab.chars[best],
                         "prob": float(p[best]), "correct": FIRST_CHAR + best == int(arr[pos]),
                         "top": self.ranked(p, 5)})
        accuracy = sum(r_["correct"] for r_ in rows) / len(rows) if rows else None
        return {"corrupted": [self.vocab.token(int(t)) for t in corrupted], "selected": rows, "accuracy": accuracy}

    def p_is_next(self, a: list[int], b: list[int]) -> float:
        """[CLS] a [SEP] b [SEP] with segment 0 for [CLS] a [SEP] and 1 for b [SEP]."""
        ids = [CLS, *a, SEP, *b, SEP]
        types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
        _, nsp = self.forward(ids, types)
        return float(softmax(nsp)[0])


@dataclass
class Models:
    """Everything read from the models folder. A part that failed to load is None and its
    endpoints answer 503, so a half-installed folder still serves the pages."""

    vocab: Vocab | None = None
    gpt: GPT | None = None
    bert: BERT | None = None
    cards: dict | None = None
    quiz: list[dict] | None = None
    errors: list[str] | None = None

    @classmethod
    def load(cls, folder: Path, threads: int = 1, parallel_runs: int = 0) -> "Models":
        """parallel_runs: how many model runs may execute at once, both models together (0 = one
        per core). Extra requests wait their turn in arrival order (see Settings.parallel_runs)."""
        models, errors, cards = cls(), [], {}
        folder = Path(folder)
        slots = parallel_runs or default_parallel_runs(threads)
        gate = FairGate(slots)
        try:
            models.vocab = Vocab.load(folder / "vocab.json")
        except (OSError, ValueError, KeyError) as e:
            errors.append(f"vocab.json: {e} (so neither model is loaded)")
        for name, klass in (("gpt", GPT), ("bert", BERT)):
            try:
                card = json.loads((folder / f"{name}.card.json").read_text(encoding="utf-8"))
                cards[name] = card
                if models.vocab is not None:
                    if int(card["config"]["vocab_size"]) != models.vocab.size:
                        raise ValueError("card and vocab.json disagree on the vocabulary size")
                    session = make_session(folder / f"{name}.onnx", threads)
                    expected = {"input_ids", "token_type_ids"} if name == "bert" else \
                        {"input_ids", "past_length", *cache_input_names(int(card["config"]["n_layer"]))}
                    if {i.name for i in session.get_inputs()} != expected:
                        raise ValueError(f"{name}.onnx inputs are not {sorted(expected)}: re-export it "
                                         "with this version's `python -m training export`")
                    setattr(models, name, klass(session, models.vocab, card["config"], gate))
            except Exception as e:  # noqa: BLE001 - any broken file leaves that model unloaded
                errors.append(f"{name}: {e}")
        try:
            items = json.loads((folder / "nsp_quiz.json").read_text(encoding="utf-8"))["items"]
            models.quiz = [dict(it) for it in items if {"id", "a", "b", "is_next"} <= set(it)]
        except (OSError, ValueError, KeyError, TypeError) as e:
            errors.append(f"nsp_quiz.json: {e}")
        models.cards, models.errors = cards, errors
        return models

