"""Serving a fine-tuned classifier: the registry's contract checks on classifier.onnx and its card,
and the answers /api/classify computes. The graphs here are small hand-written ONNX graphs with
known weights (an embedding table read at [CLS] or at every character), so the expected
probabilities are computed independently with numpy; the trainer's real classifiers are served in
tests/app/test_finetunes_api.py."""
from __future__ import annotations

import json
import shutil

import numpy as np
import onnx
import pytest
from fastapi.testclient import TestClient
from onnx import TensorProto, helper, numpy_helper

from app.config import Settings
from app.contract import CLS, SEP, Vocab
from app.main import create_app
from app.registry import Registry
from app.runtime import Runtime

from pathlib import Path

SHIPPED_MODELS = Path(__file__).resolve().parents[2] / "models"

LABELS = {"sequence": ["negative", "positive"], "token": ["0", "1"]}


def table(vocab_size: int, n_labels: int) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(vocab_size, n_labels)).astype(np.float32)


def write_graph(path, kind: str, vocab_size: int, n_labels: int, output: str = "logits", types: bool = True) -> None:
    """logits = E[input_ids] at [CLS] (sequence) or at every position (token); token_type_ids unused."""
    E = numpy_helper.from_array(table(vocab_size, n_labels), "E")
    nodes = [helper.make_node("Gather", ["E", "input_ids"], ["emb"], axis=0)]
    if kind == "sequence":
        idx = numpy_helper.from_array(np.array(0, dtype=np.int64), "zero")
        nodes.append(helper.make_node("Gather", ["emb", "zero"], [output], axis=1))
        inits, shape = [E, idx], ["batch", n_labels]
    else:
        nodes.append(helper.make_node("Identity", ["emb"], [output]))
        inits, shape = [E], ["batch", "T", n_labels]
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "T"])]
    if types:
        inputs.append(helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["batch", "T"]))
    graph = helper.make_graph(nodes, "classifier", inputs,
                              [helper.make_tensor_value_info(output, TensorProto.FLOAT, shape)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def make_set(folder, kind="sequence", **graph) -> Vocab:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(SHIPPED_MODELS / "vocab.json", folder / "vocab.json")
    vocab = Vocab.load(folder / "vocab.json")
    labels = LABELS[kind]
    write_graph(folder / "classifier.onnx", kind, vocab.size, graph.pop("n_labels", len(labels)), **graph)
    card = {"task": "toy", "kind": kind, "labels": labels, "arm": "full", "base_model": "shakespeare",
            "examples": 10, "accuracy": 0.75, "config": {"context": 32, "vocab_size": vocab.size}}
    (folder / "classifier.card.json").write_text(json.dumps(card), encoding="utf-8")
    return vocab


def softmax(x):
    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def test_a_whole_text_classifier_reads_cls(tmp_path):
    vocab = make_set(tmp_path / "seq")
    registry = Registry(Runtime())
    registry.add(SHIPPED_MODELS, pin=True, default=True)
    set_id = registry.add(tmp_path / "seq", id="toy.full", kind="classifier")
    out = registry.classifier(set_id).classify("Hello")
    want = softmax(table(vocab.size, 2)[CLS].astype(np.float64))
    assert out["probabilities"] == pytest.approx(want.tolist(), abs=1e-6)
    assert out["prediction"] == LABELS["sequence"][int(np.argmax(want))] and out["characters"] is None
    assert registry.get(set_id).status == "ok" and registry.get(set_id).meta.families == ["classifier"]


def test_a_per_character_classifier_answers_every_character(tmp_path):
    vocab = make_set(tmp_path / "tok", "token", types=False)
    registry = Registry(Runtime())
    set_id = registry.add(tmp_path / "tok", id="toy.tok", kind="classifier")
    out = registry.classifier(set_id).classify("Ab\u263a")
    ids, unknown = vocab.encode("Ab\u263a")
    assert [c["char"] for c in out["characters"]] == ["A", "b", "\u263a"]
    assert unknown == [{"position": 2, "char": "\u263a"}]
    for c, tid in zip(out["characters"], ids):
        assert c["probabilities"] == pytest.approx(softmax(table(vocab.size, 2)[tid].astype(np.float64)).tolist(), abs=1e-6)
    assert ids[0] != CLS and SEP not in ids  # [CLS] and [SEP] wrap the text; answers are the characters'


@pytest.mark.parametrize("graph, card, says", [
    ({"output": "scores"}, {}, "expected logits"),
    ({"n_labels": 3}, {}, "gives 3 scores"),
    ({}, {"kind": "span"}, "kind must be one of"),
    ({}, {"labels": ["only"]}, "labels must be 2 to 20"),
    ({}, {"config": {"vocab_size": 3, "context": 32}}, "disagrees with vocab.json"),
    ({}, {"config": {}}, "context"),
])
def test_a_classifier_that_breaks_the_contract_is_not_served(tmp_path, graph, card, says):
    make_set(tmp_path / "bad", **graph)
    path = tmp_path / "bad" / "classifier.card.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **card}), encoding="utf-8")
    registry = Registry(Runtime())
    set_id = registry.add(tmp_path / "bad", id="bad.full", kind="classifier")
    loaded = registry.get(set_id)
    assert loaded.status == "failed" and loaded.classifier is None
    assert any(says in p for p in loaded.problems), loaded.problems


def test_classify_over_http(tmp_path):
    make_set(tmp_path / "seq")
    settings = Settings(data_dir=tmp_path / "data", extra_models=[tmp_path / "seq"])
    with TestClient(create_app(settings)) as client:
        sets = {s["id"]: s for s in client.get("/api/models").json()["sets"]}
        assert sets["seq"]["families"] == ["classifier"]
        r = client.post("/api/classify", json={"model": "seq", "text": "What a day"})
        assert r.status_code == 200, r.json()
        body = r.json()
        assert body["kind"] == "sequence" and body["labels"] == LABELS["sequence"] and body["accuracy"] == 0.75
        assert sum(body["probabilities"]) == pytest.approx(1.0)
        too_long = client.post("/api/classify", json={"model": "seq", "text": "x" * 31})
        assert too_long.status_code == 422 and too_long.json()["parameter"] == "text" and "30" in too_long.json()["detail"]
        for body, param, status in [({"model": "shakespeare", "text": "a"}, "model", 409),
                                    ({"model": "nope", "text": "a"}, "model", 404),
                                    ({"model": "seq", "text": ""}, "text", 422),
                                    ({"model": "seq", "text": 5}, "text", 422),
                                    ({"model": "seq", "text": "a", "k": 1}, "k", 422)]:
            r = client.post("/api/classify", json=body)
            assert r.status_code == status and r.json()["parameter"] == param, r.json()
        fill = client.post("/api/mask-fill", json={"text": "a[MASK]", "model": "seq"})
        assert fill.status_code == 409 and fill.json()["parameter"] == "model"
