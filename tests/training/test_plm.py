"""PLM (issue 41 must 2): permutation language modelling with XLNet's two streams as one sequence
and one mask. A character sees the characters up to its place in the order, a query those strictly
before its place and never its own character; training lowers the held-out loss; plm.onnx, written
by `package`, agrees with PyTorch and is served by app/tasks/plm.py; the live run trains it."""
import io
import json

import pytest
import torch

from app.contract import MASK
from training.model import TransformerConfig
from training.plm import PLM, n_predicted, permuted, window_length
from training.train import TrainConfig, Trainer


def tiny(corpus, out, **kw):
    return TrainConfig(**{**dict(family="plm", corpus=str(corpus), out=str(out), n_layer=1, n_head=2, n_embd=32,
                                 n_ff=64, context=48, batch_size=8, steps=40, eval_interval=20, eval_batches=2,
                                 warmup=5, lr=3e-3, threads=1), **kw})


def test_the_two_streams_of_one_order():
    ids = torch.arange(10, 30)  # 20 characters
    row = permuted(ids, torch.Generator().manual_seed(3))
    n = n_predicted(20)
    assert n == 3 and len(row["idx"]) == 23 and (row["idx"][20:] == MASK).all()
    targets = row["position_ids"][20:]
    assert (row["labels"][20:] == ids[targets]).all() and (row["labels"][:20] == -100).all()
    place = (row["ranks"][:20] - 1) // 2  # each character's place in the order
    assert sorted(place.tolist()) == list(range(20)) and (row["ranks"][:20] % 2 == 1).all()
    assert sorted(place[targets].tolist()) == [17, 18, 19]  # the last places are predicted
    assert (row["ranks"][20:] == 2 * place[targets]).all()
    assert window_length(48) + n_predicted(window_length(48)) <= 48


def test_a_query_never_sees_its_own_character_and_a_character_sees_up_to_its_place():
    model = PLM(TransformerConfig(vocab_size=40, context=32, n_layer=2, n_head=2, n_embd=16, n_ff=32)).eval()
    ids = torch.arange(10, 22)
    row = {k: v[None] for k, v in permuted(ids, torch.Generator().manual_seed(1)).items()}
    allowed = model.allowed(row["ranks"])[0, 0]
    T = 12
    place = ((row["ranks"][0, :T] - 1) // 2).tolist()
    for q in range(T, allowed.shape[0]):
        target = int(row["position_ids"][0, q])
        seen = {j for j in range(T) if allowed[q, j]}
        assert seen == {j for j in range(T) if place[j] < place[target]} and target not in seen
        assert int(allowed[q, T:].sum()) == 1 and allowed[q, q]  # among the queries, only itself
    for i in range(T):
        assert {j for j in range(T) if allowed[i, j]} == {j for j in range(T) if place[j] <= place[i]}
    # what it computes: changing a predicted character changes no query's output, only the characters
    out = model(row["idx"], row["position_ids"], row["ranks"])
    target = int(row["position_ids"][0, -1])  # the last place of the order: nothing sees it but itself
    idx2 = row["idx"].clone()
    idx2[0, target] = 33
    out2 = model(idx2, row["position_ids"], row["ranks"])
    assert torch.allclose(out[0, T:], out2[0, T:], atol=1e-6)


@pytest.mark.slow
def test_plm_trains_packages_and_is_served(tiny_corpus, tmp_path):
    from training.package import package

    t = Trainer(tiny(tiny_corpus, tmp_path / "run", steps=60, eval_interval=30))
    t.fit(log=io.StringIO())
    summary = package([str(tmp_path / "run" / "ckpt.pt")], tmp_path / "set")
    assert summary["plm"]["parity_max_abs_diff"] < 1e-4
    # its attention inspection graph (the mask page's real weights), checked against PyTorch's own mask
    inspection = summary["inspection"]["plm"]["parity"]
    assert inspection["ok"] and inspection["weights"] <= 1e-4 and inspection["row_sums"] <= 1e-5
    assert (tmp_path / "set" / "plm.attn.onnx").exists()
    card = json.loads((tmp_path / "set" / "plm.card.json").read_text())
    assert card["family"] == "plm" and card["attention"] == "permuted"
    test = card["evaluation"]["test"]
    assert test["predicted_top1"] > test["random_init"]["predicted_top1"]
    assert test["nats_per_char"] < test["random_init"]["nats_per_char"] and test["predicted"] > 1000

    import onnxruntime as ort

    from app.contract import Vocab
    from app.contract.checks import check_graph
    from app.tasks.plm import PLM as Served

    sess = ort.InferenceSession(str(tmp_path / "set" / "plm.onnx"), providers=["CPUExecutionProvider"])
    vocab = Vocab.load(tmp_path / "set" / "vocab.json")
    check_graph("plm", sess, card["config"], vocab.size)
    served = Served(sess, vocab, card["config"])
    served.smoke_test()
    ids, _ = vocab.encode("the king is dead, long live the king")
    order = torch.randperm(len(ids), generator=torch.Generator().manual_seed(5)).tolist()
    out = served.guess(ids, order, 5)
    assert [g["position"] for g in out] == order[-5:] and all(abs(g["probs"].sum() - 1) < 1e-6 for g in out)


@pytest.mark.slow
def test_live_run_trains_and_writes_plm(tiny_corpus, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    run_dir = tmp_path / "run"
    overrides = json.dumps({"n_layer": 1, "n_head": 2, "n_embd": 32, "n_ff": 64, "context": 48, "batch_size": 8,
                            "steps": 12, "warmup": 2})
    proc = subprocess.run([sys.executable, "-m", "training", "live", "--out", str(run_dir), "--corpus", str(tiny_corpus),
                           "--families", "plm", "--minutes", "5", "--overrides", overrides],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=600)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert proc.returncode == 0 and events[-1]["event"] == "finished", proc.stdout[-2000:] + proc.stderr[-2000:]
    assert events[-1]["steps"] == {"plm": 12} and "predicted_top1" in events[-1]["metrics"]["plm"]
    view = [e for e in events if e["event"] == "sample"][-1]["plm"]
    assert view["guesses"] and view["masked"].count("_") == len(view["guesses"])
    card = json.loads((run_dir / "final" / "plm.card.json").read_text())
    assert card["family"] == "plm" and card["onnx"]["parity_max_abs_diff"] < 1e-4
