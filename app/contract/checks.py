"""The load checks of a model set: a graph's names and shapes against its card (an onnxruntime
session is passed in), and the NSP quiz bank's items. Plain Python; raise ValueError naming the part."""
from __future__ import annotations

import re

from .spec import (CLASSIFIER_INPUTS, CLASSIFIER_KINDS, CLASSIFIER_OUTPUT, MAX_LABELS, QUIZ_ID_PATTERN, SPECS,
                   bert_pair_room, cache_names, cache_shape, classifier_context, onnx_io)


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
    want_in, want_out = onnx_io(family, n_layer)
    if sorted(inputs) != sorted(want_in):
        raise ValueError(f"{family}.onnx inputs are {sorted(inputs)}, expected {sorted(want_in)} "
                         "(re-export it with this version's `python -m training export`)")
    if sorted(outputs) != sorted(want_out):
        raise ValueError(f"{family}.onnx outputs are {sorted(outputs)}, expected {sorted(want_out)}")
    fam = SPECS[family]
    for name, want in fam.last_dims.items():  # e.g. logits over the vocabulary, NSP's two classes
        size = want(vocab_size) if callable(want) else vocab_size if want == "vocab" else want  # f: T5's sentinels
        if _dims(outputs[name])[-1] not in (None, size):
            raise ValueError(f"{family}.onnx {name} has {_dims(outputs[name])[-1]} classes, expected {size}"
                             + (" (the vocabulary's size)" if want == "vocab" else ""))
    if fam.cached:
        want = cache_shape(config)[1:]
        for name in cache_names(n_layer) + cache_names(n_layer, "present"):
            arg = inputs.get(name) or outputs.get(name)
            if _dims(arg)[1:] != want:
                raise ValueError(f"{family}.onnx {name} has shape {_dims(arg)[1:]} per sequence; the card "
                                 f"(n_head, context, n_embd / n_head) says {want}")


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
