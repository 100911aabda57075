"""The contract between training/ and app/: the one source of truth both sides import.

Who may import it: everything in app/ and training/ (and tests, benchmarks). It imports nothing
but the standard library (no torch, numpy or FastAPI), so serving stays torch-free and training
needs no web stack. The load checks that need a session (onnxruntime) live in app/contract/checks.py.

A model set is a folder (models/ is the shipped one; a training run's folders have the same shape):

    vocab.json          {"specials": SPECIALS, "chars": [...]}: token id = index in specials + chars
    gpt.onnx            decoding graph (see training/export/): inputs input_ids, past_length and
                        one key and one value buffer per layer; outputs logits and present_* buffers
    bert.onnx           inputs input_ids, token_type_ids; outputs mlm_logits, nsp_logits
    <family>.card.json  config (vocab_size, context, n_layer, n_head, n_embd, ...), metrics, curves
    nsp_quiz.json       {"items": [{"id", "a", "b", "is_next", "source_a", "source_b"}, ...]} (optional)
    set.json            {"id", "name"} (optional; the shipped set's id is "shakespeare")
    classifier.onnx     a fine-tuned BERT with a head (python -m training finetune): input input_ids
                        (and token_type_ids when the graph has it), [CLS] text [SEP]; output logits,
                        (1, n_labels) for a whole-input task, (1, T, n_labels) for a per-character one
    classifier.card.json  task, kind (sequence|token), labels, arm, base model, examples, accuracy

    electra.onnx        inputs input_ids, token_type_ids; output replaced_logits (batch, seq):
                        > 0 means "this character was replaced" (training/electra.py)

A training run's folder (python -m training live --out RUN) has the same shape in final/ and in
each snapshots/step-NNNNNN/, beside progress.jsonl (one JSON event per line, EVENTS) and
checkpoints/. Folders are assembled in .tmp-<name> and renamed into place (clean_partial).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import threading
from pathlib import Path

from .families import FAMILIES, SPECS, cache_names  # noqa: F401  (the families, declared once)

SPECIALS = ["[PAD]", "[UNK]", "[MASK]", "[CLS]", "[SEP]"]
PAD, UNK, MASK, CLS, SEP = range(len(SPECIALS))
FIRST_CHAR = len(SPECIALS)  # ids below this are special tokens: never predicted, never sampled
MASK_MARKER = "[MASK]"

PARTS = (*FAMILIES, "classifier")  # what a model set may hold; a classifier set holds only that
OPTIONAL_PARTS = (*(n for n, s in SPECS.items() if s.optional), "classifier")  # a set without these is whole

# Files of a model set.
VOCAB_FILE, QUIZ_FILE, SET_FILE, SNAPSHOT_FILE = "vocab.json", "nsp_quiz.json", "set.json", "snapshot.json"


def onnx_file(family: str) -> str:
    return f"{family}.onnx"


def card_file(family: str) -> str:
    return f"{family}.card.json"


# What a card holds (training writes every key; app reads config, family, objective, attention).
CARD_KEYS = ("name", "family", "objective", "attention", "config", "parameters", "onnx", "corpus",
             "training", "evaluation", "curves")

# A run folder and its events (python -m training live; the app's /train page reads both).
PROGRESS_FILE, SNAPSHOTS_DIR, FINAL_DIR, CHECKPOINTS_DIR = "progress.jsonl", "snapshots", "final", "checkpoints"
EVENTS = ("start", "models", "progress", "eval", "sample", "snapshot", "snapshot_failed", "exporting",
          "finished", "cancelled", "error")
MASKING_SCHEMES = ("char", "span", "word")  # which characters a masked LM hides (training and the Objectives page)
MIN_CORPUS_CHARS = 2000  # a run's corpus: fewer characters leave nothing to learn and too little held out
SET_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$"  # model set ids: safe in URLs and file names
QUIZ_ID_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"
CLASSIFIER_INPUTS = ["input_ids", "token_type_ids"]  # token_type_ids optional
CLASSIFIER_OUTPUT = "logits"
CLASSIFIER_KINDS = {"sequence": 2, "token": 3}  # kind -> rank of logits
MAX_LABELS = 20


def onnx_io(family: str, n_layer: int) -> tuple[list[str], list[str]]:
    """(input names, output names) of <family>.onnx (app/contract/families.py)."""
    return SPECS[family].io(n_layer)


def cache_shape(config: dict) -> list[int]:
    """One layer's key (or value) buffer for one sequence: (1, n_head, context, head_size)."""
    n_head = int(config["n_head"])
    return [1, n_head, int(config["context"]), int(config["n_embd"]) // n_head]


# BERT's length budgets: what fits around the text in one sequence.
def bert_text_room(context: int) -> int:
    return context - 2  # [CLS] text [SEP]


def bert_pair_room(context: int) -> int:
    return context - 3  # [CLS] a [SEP] b [SEP]


class Vocab:
    """Character vocabulary: token id = index in specials + chars (the format of vocab.json)."""

    def __init__(self, chars: list[str]):
        self.chars = list(chars)
        self.itos = SPECIALS + self.chars
        self.stoi = {ch: i for i, ch in enumerate(self.itos) if i >= FIRST_CHAR}
        self.size = len(self.itos)

    @classmethod
    def load(cls, path: Path) -> "Vocab":
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("specials") != SPECIALS:
            raise ValueError("vocab.json has unexpected special tokens")
        chars = data.get("chars")
        if not isinstance(chars, list) or not all(isinstance(c, str) and len(c) == 1 for c in chars):
            raise ValueError("vocab.json: chars must be a list of single characters")
        if len(set(chars)) != len(chars):
            raise ValueError("vocab.json: chars has duplicates")
        return cls(chars)

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


# --- the random stream: u_i = splitmix32(splitmix32(seed) ^ i) / 2^32 (sampling, probes, demos) ---
_M32 = 0xFFFFFFFF


def splitmix32(a: int) -> int:
    """A 32-bit integer hash (the splitmix finaliser): consecutive inputs give unrelated outputs."""
    a = (a + 0x9E3779B9) & _M32
    t = a ^ (a >> 16)
    t = (t * 0x21F0AAAD) & _M32
    t ^= t >> 15
    t = (t * 0x735A2D97) & _M32
    return (t ^ (t >> 15)) & _M32


def uniform(seed: int, index: int) -> float:
    """The uniform number in [0, 1) that draws character `index` of a generation with `seed`.
    Counter-based (a hash of seed and index, not a generator's state), so character i can be
    drawn on its own, by any request, and come out the same."""
    return splitmix32((splitmix32(seed & _M32) ^ index) & _M32) / 4294967296.0



def shuffled(n: int, seed: int) -> list[int]:
    """0 .. n-1 in a random order drawn from the random stream (Fisher-Yates from the end, index i
    drawing u_i): the order a permutation LM's lesson views use (static/lib/engine_core.js the same)."""
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        j = int(uniform(seed, i) * (i + 1))
        order[i], order[j] = order[j], order[i]
    return order

# --- files that readers must never see half-written ----------------------------------------------

def write_text(path: Path, text: str) -> None:
    """Write aside, then rename: a reader never sees half a file, and a failed write (a full disk)
    leaves no temporary behind."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_json(path: Path, data) -> None:
    write_text(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def clean_partial(run_dir: Path) -> None:
    """Remove half-assembled sets (.tmp-*) of a run folder: only complete folders may remain."""
    for folder in (Path(run_dir), Path(run_dir) / SNAPSHOTS_DIR):
        if folder.is_dir():
            for p in folder.glob(".tmp-*"):
                shutil.rmtree(p, ignore_errors=True)


def classifier_context(card: dict) -> int:
    """The classifier's sequence budget ([CLS] text [SEP] included), from its card."""
    config = card.get("config") if isinstance(card.get("config"), dict) else {}
    value = config.get("context", card.get("context"))
    if not isinstance(value, int) or isinstance(value, bool) or value < 3:
        raise ValueError("classifier card: context (or config.context) must be an integer of at least 3")
    return value
