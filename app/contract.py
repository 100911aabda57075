"""The contract between training/ and app/, stated once on the app side.

A model set is a folder (models/ is the shipped one; a training run's folders have the same shape):

    vocab.json          {"specials": SPECIALS, "chars": [...]}: token id = index in specials + chars
    gpt.onnx            decoding graph (see training/export.py): inputs input_ids, past_length and
                        one key and one value buffer per layer; outputs logits and present_* buffers
    bert.onnx           inputs input_ids, token_type_ids; outputs mlm_logits, nsp_logits
    <family>.card.json  config (vocab_size, context, n_layer, n_head, n_embd, ...), metrics, curves
    nsp_quiz.json       {"items": [{"id", "a", "b", "is_next", "source_a", "source_b"}, ...]} (optional)
    set.json            {"id", "name"} (optional; the shipped set's id is "shakespeare")
    classifier.onnx     a fine-tuned BERT with a head (python -m training finetune): input input_ids
                        (and token_type_ids when the graph has it), [CLS] text [SEP]; output logits,
                        (1, n_labels) for a whole-input task, (1, T, n_labels) for a per-character one
    classifier.card.json  task, kind (sequence|token), labels, arm, base model, examples, accuracy

training/export.py states the same names from the exporting side; tests/app/test_contract.py
holds the two to each other. Everything here is plain data and numpy: no torch, no HTTP.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

SPECIALS = ["[PAD]", "[UNK]", "[MASK]", "[CLS]", "[SEP]"]
PAD, UNK, MASK, CLS, SEP = range(len(SPECIALS))
FIRST_CHAR = len(SPECIALS)  # ids below this are special tokens: never predicted, never sampled
MASK_MARKER = "[MASK]"

FAMILIES = ("gpt", "bert")
PARTS = (*FAMILIES, "classifier")  # what a model set may hold; a classifier set holds only that
SET_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$"  # model set ids: safe in URLs and file names
QUIZ_ID_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"
BERT_INPUTS = ["input_ids", "token_type_ids"]
BERT_OUTPUTS = ["mlm_logits", "nsp_logits"]
CLASSIFIER_INPUTS = ["input_ids", "token_type_ids"]  # token_type_ids optional
CLASSIFIER_OUTPUT = "logits"
CLASSIFIER_KINDS = {"sequence": 2, "token": 3}  # kind -> rank of logits
MAX_LABELS = 20


def cache_names(n_layer: int, prefix: str = "past") -> list[str]:
    """gpt.onnx's cache inputs (prefix past) or outputs (present), layer by layer, key then value."""
    return [f"{prefix}_{kind}_{i}" for i in range(n_layer) for kind in ("key", "value")]


def gpt_inputs(n_layer: int) -> list[str]:
    return ["input_ids", "past_length", *cache_names(n_layer)]


def gpt_outputs(n_layer: int) -> list[str]:
    return ["logits", *cache_names(n_layer, "present")]


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


def _dims(arg) -> list:
    return [d if isinstance(d, int) else None for d in arg.shape]  # symbolic dims -> None


def check_graph(family: str, session, config: dict, vocab_size: int) -> None:
    """Raise ValueError unless the graph's input and output names and static shapes are the ones
    this contract and the card's config say (a mismatch would otherwise surface as a 500 later)."""
    for key in ("vocab_size", "context", "n_layer", "n_head", "n_embd"):
        value = config.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"card config.{key} must be a positive integer")
    if config["vocab_size"] != vocab_size:
        raise ValueError(f"card vocab_size {config['vocab_size']} disagrees with vocab.json ({vocab_size})")
    if config["n_embd"] % config["n_head"]:
        raise ValueError("card n_embd is not a multiple of n_head")
    inputs = {i.name: i for i in session.get_inputs()}
    outputs = {o.name: o for o in session.get_outputs()}
    n_layer = config["n_layer"]
    want_in, want_out = (gpt_inputs(n_layer), gpt_outputs(n_layer)) if family == "gpt" else (BERT_INPUTS, BERT_OUTPUTS)
    if sorted(inputs) != sorted(want_in):
        raise ValueError(f"{family}.onnx inputs are {sorted(inputs)}, expected {sorted(want_in)} "
                         "(re-export it with this version's `python -m training export`)")
    if sorted(outputs) != sorted(want_out):
        raise ValueError(f"{family}.onnx outputs are {sorted(outputs)}, expected {sorted(want_out)}")
    logits = outputs["logits" if family == "gpt" else "mlm_logits"]
    if _dims(logits)[-1] not in (None, vocab_size):
        raise ValueError(f"{family}.onnx predicts {_dims(logits)[-1]} tokens, the vocabulary has {vocab_size}")
    if family == "gpt":
        want = cache_shape(config)[1:]
        for name in cache_names(n_layer) + cache_names(n_layer, "present"):
            arg = inputs.get(name) or outputs.get(name)
            if _dims(arg)[1:] != want:
                raise ValueError(f"gpt.onnx {name} has shape {_dims(arg)[1:]} per sequence; the card "
                                 f"(n_head, context, n_embd / n_head) says {want}")
    else:
        nsp = _dims(outputs["nsp_logits"])
        if nsp[-1] not in (None, 2):
            raise ValueError("bert.onnx nsp_logits must have 2 classes (IsNext, NotNext)")


def check_quiz(items, context: int | None) -> list[dict]:
    """The quiz bank's items, each checked: unique string id, non-empty a and b, boolean is_next,
    and (when BERT's context is known) a pair that fits it. Raises ValueError naming the item."""
    if not isinstance(items, list) or not items:
        raise ValueError("nsp_quiz.json: items must be a non-empty list")
    seen, out = set(), []
    for k, it in enumerate(items):
        where = f"nsp_quiz.json item {k}"
        if not isinstance(it, dict):
            raise ValueError(f"{where} is not an object")
        if not isinstance(it.get("id"), str) or not re.match(QUIZ_ID_PATTERN, it["id"]):
            raise ValueError(f"{where}: id must be a short name ({QUIZ_ID_PATTERN})")
        if it["id"] in seen:
            raise ValueError(f"{where}: id {it['id']!r} is repeated")
        seen.add(it["id"])
        for key in ("a", "b"):
            if not isinstance(it.get(key), str) or not it[key].strip():
                raise ValueError(f"{where}: {key} must be non-empty text")
        if not isinstance(it.get("is_next"), bool):
            raise ValueError(f"{where}: is_next must be true or false")
        for key in ("source_a", "source_b"):
            if not isinstance(it.get(key, ""), str):
                raise ValueError(f"{where}: {key} must be text")
        if context is not None and len(it["a"]) + len(it["b"]) > bert_pair_room(context):
            raise ValueError(f"{where}: a and b do not fit BERT's context of {context}")
        out.append(dict(it))
    return out


def classifier_context(card: dict) -> int:
    """The classifier's sequence budget ([CLS] text [SEP] included), from its card."""
    config = card.get("config") if isinstance(card.get("config"), dict) else {}
    value = config.get("context", card.get("context"))
    if not isinstance(value, int) or isinstance(value, bool) or value < 3:
        raise ValueError("classifier card: context (or config.context) must be an integer of at least 3")
    return value


def check_classifier(session, card: dict, vocab_size: int) -> None:
    """Raise ValueError unless classifier.onnx and its card agree with this contract: kind and
    labels on the card; input_ids (and maybe token_type_ids) in; logits of the kind's rank out
    with one column per label."""
    kind, labels = card.get("kind"), card.get("labels")
    if kind not in CLASSIFIER_KINDS:
        raise ValueError(f"classifier card: kind must be one of {sorted(CLASSIFIER_KINDS)}")
    if (not isinstance(labels, list) or not 2 <= len(labels) <= MAX_LABELS
            or not all(isinstance(x, str) and x for x in labels) or len(set(labels)) != len(labels)):
        raise ValueError(f"classifier card: labels must be 2 to {MAX_LABELS} distinct non-empty strings")
    classifier_context(card)
    config = card.get("config") if isinstance(card.get("config"), dict) else {}
    if config.get("vocab_size", vocab_size) != vocab_size:
        raise ValueError(f"classifier card vocab_size {config['vocab_size']} disagrees with vocab.json ({vocab_size})")
    inputs = {i.name: i for i in session.get_inputs()}
    outputs = {o.name: o for o in session.get_outputs()}
    if "input_ids" not in inputs or not set(inputs) <= set(CLASSIFIER_INPUTS):
        raise ValueError(f"classifier.onnx inputs are {sorted(inputs)}, expected input_ids (and token_type_ids)")
    if CLASSIFIER_OUTPUT not in outputs:
        raise ValueError(f"classifier.onnx outputs are {sorted(outputs)}, expected {CLASSIFIER_OUTPUT}")
    dims = _dims(outputs[CLASSIFIER_OUTPUT])
    if len(dims) != CLASSIFIER_KINDS[kind]:
        raise ValueError(f"classifier.onnx logits have {len(dims)} dimensions; a {kind} classifier has "
                         f"{CLASSIFIER_KINDS[kind]}")
    if dims[-1] not in (None, len(labels)):
        raise ValueError(f"classifier.onnx gives {dims[-1]} scores, the card names {len(labels)} labels")
