"""POST /api/spans (issue 41 must 3, its API): the family that writes spans back (T5) fills the spans a
student hid, each character with its probability, as app/tasks/t5.py computes it from the served
graph; bad spans are a 422 naming `spans`; a set without T5 is a 409 naming `model`."""
from __future__ import annotations

import io
import shutil

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from tests.app.test_engine_node import NODE, run_engine, run_server


@pytest.fixture(scope="module")
def t5_set(tiny_models_dir, tiny_corpus, tmp_path_factory):
    """The tiny set plus a tiny T5 trained on the same corpus (the same vocabulary)."""
    from training.package import package
    from training.train import TrainConfig, Trainer

    root = tmp_path_factory.mktemp("spans")
    cfg = TrainConfig(family="t5", corpus=str(tiny_corpus), out=str(root / "run"), n_layer=1, n_head=2, n_embd=32,
                      n_ff=64, context=64, batch_size=8, steps=30, eval_interval=30, eval_batches=1, warmup=5,
                      lr=3e-3, threads=1)
    Trainer(cfg).fit(log=io.StringIO())
    folder = root / "set"
    shutil.copytree(tiny_models_dir, folder)
    package([str(root / "run" / "ckpt.pt")], folder, eval_scale=0.05)
    return folder


@pytest.fixture(scope="module")
def client(t5_set, tmp_path_factory):
    with TestClient(create_app(Settings(models_dir=t5_set, data_dir=tmp_path_factory.mktemp("data")))) as c:
        yield c


def test_the_hidden_spans_are_written_back_with_their_probabilities(client, t5_set):
    text = "the king is dead, long live the king"
    r = client.post("/api/spans", json={"text": text, "spans": [[4, 8], [19, 22]]})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["family"] == "t5" and out["corrupted"] == "the ⟨0⟩ is dead, l⟨1⟩ live the king"
    assert [(s["span"], s["truth"]) for s in out["spans"]] == [(0, "king"), (1, "ong")]
    assert all(0 < w["prob"] <= 1 and len(w["char"]) == 1 for s in out["spans"] for w in s["written"])
    # the same answer from the served task directly (no second rule in the router)
    import onnxruntime as ort

    from app.contract import Vocab
    from app.tasks.t5 import T5

    vocab = Vocab.load(t5_set / "vocab.json")
    import json

    task = T5(ort.InferenceSession(str(t5_set / "t5.onnx")), vocab, json.loads((t5_set / "t5.card.json").read_text())["config"])
    direct = task.write(vocab.encode(text)[0], [(4, 8), (19, 22)], limit=7 + 2 + 8)
    assert [[w["char"] for w in s["written"]] for s in direct] == [[w["char"] for w in s["written"]] for s in out["spans"]]


@pytest.mark.parametrize("body", [
    {"text": "abcdef", "spans": [[2, 2]]},
    {"text": "abcdef", "spans": [[4, 9]]},
    {"text": "abcdef", "spans": [[1, 3], [3, 4]]},
    {"text": "abcdef", "spans": [[3, 4], [0, 1]]},
    {"text": "abcdef", "spans": []},
    {"text": "x" * 70, "spans": [[1, 2]]},
])
def test_bad_spans_are_refused_naming_the_parameter(client, body):
    r = client.post("/api/spans", json=body)
    assert r.status_code == 422 and r.json()["parameter"] in ("spans", "text"), r.text


def test_a_set_without_t5_says_so(tiny_models_dir, tmp_path):
    with TestClient(create_app(Settings(models_dir=tiny_models_dir, data_dir=tmp_path))) as c:
        r = c.post("/api/spans", json={"text": "abcdef", "spans": [[1, 3]]})
    assert r.status_code in (409, 503) and r.json()["parameter"] == "model"


SPANS = [  # on the device (static/families/t5.js): 3 answers, then 3 refusals
    ["/api/spans", {"text": "the king is dead, long live the king", "spans": [[4, 8], [19, 22]]}],
    ["/api/spans", {"text": "caf\u00e9 \U0001F600 ROMEO. O, she doth teach", "spans": [[0, 2], [9, 14], [20, 21]]}],
    ["/api/spans", {"text": "What light through yonder window breaks", "spans": [[11, 18]]}],
    ["/api/spans", {"text": "abcdef", "spans": [[4, 9]]}],
    ["/api/spans", {"text": "abcdef", "spans": [[1, 3], [3, 4]]}],
    ["/api/spans", {"text": "x" * 70, "spans": [[1, 2]]}],
]


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_device_writes_the_same_spans(t5_set, tmp_path):
    server, engine = run_server(t5_set, SPANS, tmp_path), run_engine(t5_set, SPANS, tmp_path)
    assert [r["status"] for r in server] == [200] * 3 + [422] * 3
    for s, e in zip(server, engine, strict=True):
        assert e["status"] == s["status"], (s, e)
        if s["status"] != 200:
            assert (e["json"]["detail"], e["json"]["parameter"]) == (s["json"]["detail"], s["json"]["parameter"])
            continue
        a, b = s["json"], e["json"]
        assert (a["family"], a["corrupted"]) == (b["family"], b["corrupted"])
        assert [(u["position"], u["char"]) for u in a["unknown_chars"]] == [(u["position"], u["char"]) for u in b["unknown_chars"]]
        for x, y in zip(a["spans"], b["spans"], strict=True):
            assert (x["span"], x["start"], x["end"], x["truth"]) == (y["span"], y["start"], y["end"], y["truth"])
            assert [w["char"] for w in x["written"]] == [w["char"] for w in y["written"]]
            assert all(abs(v["prob"] - w["prob"]) <= 1e-4 for v, w in zip(x["written"], y["written"]))
