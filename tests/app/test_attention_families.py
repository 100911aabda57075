"""The mask page's four masks (issue 41 must 3): POST /api/attention answers T5 (prefix) and PLM
(permuted) beside GPT and BERT where the set has them, each over what it reads (T5 the line with a
span hidden and written back; PLM its two streams for the order `seed` draws), with the trained
model's own weights (PyTorch's softmax under its own mask), and null where the set has none; the
device (lib/engine_attention.js with each family's mask.layout) gives the same answers."""
from __future__ import annotations

import io
import shutil

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.contract.families import for_page
from app.main import create_app
from tests.app.test_engine_node import NODE, assert_same_attention, run_engine, run_server

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def four_set(tiny_models_dir, tiny_corpus, tmp_path_factory):
    """The tiny set (GPT, BERT) plus a tiny T5 and a tiny PLM trained on the same corpus."""
    from training.package import package
    from training.train import TrainConfig, Trainer

    root = tmp_path_factory.mktemp("four")
    runs = []
    for family in ("t5", "plm"):
        cfg = TrainConfig(family=family, corpus=str(tiny_corpus), out=str(root / family), n_layer=2, n_head=2, n_embd=32,
                          n_ff=64, context=64, batch_size=8, steps=30, eval_interval=30, eval_batches=1, warmup=5,
                          lr=3e-3, threads=1)
        Trainer(cfg).fit(log=io.StringIO())
        runs.append(str(root / family / "ckpt.pt"))
    folder = root / "set"
    shutil.copytree(tiny_models_dir, folder)
    package(runs, folder, eval_scale=0.05)
    return folder


@pytest.fixture(scope="module")
def client(four_set, tmp_path_factory):
    with TestClient(create_app(Settings(models_dir=four_set, data_dir=tmp_path_factory.mktemp("data")))) as c:
        yield c


def reference(four_set, family: str, client, text: str, seed: int) -> tuple[list[int], np.ndarray]:
    """The trained model's own weights (every layer and head) over what the served task says it reads."""
    from training.inspect_export import reference_weights
    from training.train import load_checkpoint

    _, model, _, _ = load_checkpoint(four_set.parent / family / "ckpt.pt")
    models = client.app.state.registry.get(None)
    seq, allowed, extra = getattr(models, family).attention_input(models.vocab.encode(text)[0], 0, seed)
    inputs = [torch.tensor([seq])] + [torch.tensor([extra[k]]) for k in extra]
    _, ws = reference_weights(model.eval(), *inputs)
    return seq, np.stack([w[0].numpy() for w in ws]), allowed


def test_t5_and_plm_show_their_own_masks_with_their_real_weights(client, four_set):
    r = client.post("/api/attention", json={"text": "the crown", "pad": 1, "seed": 3})
    assert r.status_code == 200, r.text
    out = r.json()
    assert set(out) == {*(s.name for s in for_page("attention")), "unknown_chars"}  # every family with a grid: null where the set has none
    assert all(out[name] is not None for name in ("gpt", "bert", "t5", "plm"))  # the four this set holds
    # T5: " cr" (a third of the way in) hidden behind ⟨0⟩, then written back after [SEP]
    assert out["t5"]["tokens"] == [*"the", "⟨0⟩", *"own", "[SEP]", "⟨0⟩", *" cr"]
    # PLM: the characters in place, then one [MASK] query (15 % of 9, rounded)
    assert out["plm"]["tokens"] == [*"the crown", "[MASK]"]
    for family in ("t5", "plm"):
        seq, ref, allowed = reference(four_set, family, client, "the crown", 3)
        got = np.asarray(out[family]["weights"])
        assert got.shape == (len(seq), len(seq))
        assert np.abs(got - ref.mean(axis=(0, 1))).max() <= 1e-4  # the mean of the layers and heads, to 4 decimals
        assert out[family]["blocked_max"] == 0 and out[family]["row_sum_max_error"] <= 1e-5
        assert np.all(got[~allowed] == 0)
    # T5's prefix (8 tokens: the line as read, [SEP]) looks both ways; the written span looks left only
    t5 = np.asarray(out["t5"]["weights"])
    assert t5[0, 7] > 0 and t5[8, 9] == 0 and t5[9, 8] > 0


def test_another_seed_is_another_order(client):
    a, b = (client.post("/api/attention", json={"text": "to be or not", "seed": s}).json()["plm"] for s in (0, 1))
    assert a["tokens"] == b["tokens"]
    blocked = lambda w: [[x == 0 for x in row] for row in w]  # noqa: E731
    assert blocked(a["weights"]) != blocked(b["weights"])


def test_a_set_without_them_shows_gpt_and_bert_only(tiny_models_dir, tmp_path):
    with TestClient(create_app(Settings(models_dir=tiny_models_dir, data_dir=tmp_path))) as c:
        r = c.post("/api/attention", json={"text": "abc"})
    assert r.status_code == 200 and r.json()["t5"] is None and r.json()["plm"] is None
    assert len(r.json()["gpt"]["tokens"]) == 3


@pytest.mark.parametrize("body", [{"text": "abc", "seed": -1}, {"text": "abc", "seed": 2**32}, {"text": "abc", "seed": "x"}])
def test_a_bad_seed_is_refused_naming_it(client, body):
    r = client.post("/api/attention", json=body)
    assert r.status_code == 422 and r.json()["parameter"] == "seed"


def test_a_device_asks_only_for_the_families_it_has(client):
    """A static copy's page asks for GPT and BERT at once and T5 or PLM when the student downloads them."""
    out = client.post("/api/attention", json={"text": "abc", "families": ["gpt", "plm"]}).json()
    assert out["gpt"] and out["plm"] and out["bert"] is None and out["t5"] is None
    r = client.post("/api/attention", json={"text": "abc", "families": ["electra"]})
    assert r.status_code == 422 and r.json()["parameter"] == "families"


CASES = [
    ["/api/attention", {"text": "to be or not", "pad": 2, "seed": 5}],
    ["/api/attention", {"text": "to be or not", "families": ["bert", "t5"]}],
    ["/api/attention", {"text": "caf\u00e9 \U0001F600 the sea!", "pad": 0, "layer": 1, "head": 1, "seed": 99}],
    ["/api/attention", {"text": "a", "seed": 0}],
    ["/api/attention", {"text": "abc", "seed": -1}],
]


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_device_draws_the_same_four(four_set, tmp_path):
    server, engine = run_server(four_set, CASES, tmp_path), run_engine(four_set, CASES, tmp_path)
    assert [r["status"] for r in server] == [200, 200, 200, 200, 422]
    for s, e in zip(server, engine, strict=True):
        assert e["status"] == s["status"], (s, e)
        if s["status"] == 200:
            assert s["json"]["t5"] and (s["json"]["plm"] or s["json"]["gpt"] is None)
            assert_same_attention(s["json"], e["json"])
        else:  # the same refusal, naming the same parameter (the wording is each side's own, as for pad and layer)
            assert e["json"]["parameter"] == s["json"]["parameter"] == "seed"
