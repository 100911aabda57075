"""Served ONNX files carry no exporter stack traces (absolute source paths of the exporting
machine): stripped on export, and from the shipped files with weights unchanged."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")

from training.onnx_meta import STACK_TRACE, count, strip_file  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
# The served graphs; web/ holds their browser copies (fp16 or fp32, checked by test_web_copies.py).
SHIPPED = sorted(p for p in (REPO / "models").rglob("*.onnx") if "web" not in p.relative_to(REPO / "models").parts)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(REPO / "models")))
def test_shipped_graphs_carry_no_stack_traces_and_their_cards_their_true_size(path):
    assert count(path) == 0
    data = path.read_bytes()
    assert b"/root/" not in data and b"/work/" not in data and b"/home/" not in data
    for card in path.parent.glob("*.json"):
        text = card.read_text()
        if f'"file": "{path.name}"' in text:
            entries = [v for v in json.loads(text).values() if isinstance(v, dict)] + [json.loads(text).get("onnx", {})]
            sizes = {e["bytes"] for e in entries if isinstance(e, dict) and e.get("file") == path.name}
            assert sizes == {path.stat().st_size}, card


def test_export_strips_them(tiny_models_dir):
    for path in tiny_models_dir.glob("*.onnx"):
        assert count(path) == 0, path


def weights(path: Path) -> list:
    proto = onnx.load(str(path), load_external_data=False)
    return [(i.name, tuple(i.dims), hashlib.sha256(i.raw_data).hexdigest()) for i in proto.graph.initializer]


def test_strip_file_removes_only_the_stack_traces(tiny_models_dir, tmp_path):
    path = tmp_path / "gpt.onnx"
    proto = onnx.load(str(tiny_models_dir / "gpt.onnx"))
    for node in proto.graph.node:
        node.metadata_props.add(key=STACK_TRACE, value='File "/home/someone/training/model.py", line 1')
        node.metadata_props.add(key="namespace", value="kept")
    onnx.save(proto, str(path))
    before = weights(path)
    assert count(path) == len(proto.graph.node) and strip_file(path) == len(proto.graph.node)
    assert count(path) == 0 and weights(path) == before
    assert all(any(p.key == "namespace" for p in n.metadata_props) for n in onnx.load(str(path)).graph.node)
    onnx.checker.check_model(str(path))
