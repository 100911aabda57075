"""T5 (issue 41 must 1): span corruption as a prefix LM on the one Transformer. The spans are T5's
draw (15 %, 3 on average, kept and hidden runs alternating), the mask is the prefix LM's (both ways
inside the prefix, left only after it), training lowers the held-out loss, and t5.onnx, written by
`package`, agrees with PyTorch and is served by app/tasks/t5.py."""
import io
import json

import pytest
import torch

from app.contract import SEP
from app.contract.families import T5_SENTINELS
from training.model import TransformerConfig
from training.t5 import T5, corrupt, draw_spans, sequence, span_counts, window_length
from training.train import TrainConfig, Trainer


def tiny(corpus, out, **kw):
    return TrainConfig(**{**dict(family="t5", corpus=str(corpus), out=str(out), n_layer=1, n_head=2, n_embd=32,
                                 n_ff=64, context=48, batch_size=8, steps=40, eval_interval=20, eval_batches=2,
                                 warmup=5, lr=3e-3, threads=1), **kw})


def test_spans_are_t5s_draw():
    gen = torch.Generator().manual_seed(0)
    lengths = []
    for _ in range(300):
        spans = draw_spans(100, gen)
        hidden, n = span_counts(100)
        assert sum(e - s for s, e in spans) == hidden == 15 and len(spans) == n == 5
        assert spans[0][0] >= 1 and all(a[1] < b[0] for a, b in zip(spans, spans[1:]))  # kept text first and between
        assert spans[-1][1] <= 100
        lengths += [e - s for s, e in spans]
    assert sum(lengths) / len(lengths) == 3.0 and max(lengths) > 5  # mean 3 exactly, lengths vary


def test_the_sequence_and_its_labels():
    ids = [10, 11, 12, 13, 14, 15, 16]
    prefix, target = corrupt(ids, [(1, 3), (5, 6)], vocab_size=40)
    assert prefix == [10, 40, 13, 14, 41, 16, SEP] and target == [40, 11, 12, 41, 15, SEP]
    seq, mask, labels = sequence(prefix, target)
    assert mask == [1] * 7 + [0] * 6
    assert labels == [-100] * 6 + [40, 11, 12, 41, 15, SEP] + [-100]  # from the prefix's last, the next token
    assert window_length(128) + 2 * span_counts(window_length(128))[1] + 2 <= 128


def test_the_prefix_mask_is_both_ways_in_the_prefix_and_left_after_it():
    model = T5(TransformerConfig(vocab_size=40, context=16, n_layer=1, n_head=2, n_embd=16, n_ff=32))
    idx = torch.tensor([[9, 9, 9, 4, 40, 9, 4, 0]])  # 4 prefix positions, 3 written, one [PAD]
    prefix = torch.tensor([[1, 1, 1, 1, 0, 0, 0, 0]])
    allowed = model.allowed(idx, prefix)[0, 0]
    assert allowed[0, :4].all() and not allowed[0, 4:].any()  # a prefix position: the whole prefix, nothing after
    assert allowed[5, :6].all() and not allowed[5, 6:].any()  # a written one: the prefix and what came before
    assert not allowed[:, 7].any()  # [PAD] is never looked at
    # the same rule in what it computes: a written token changes nothing before it in the prefix
    out = model(idx, prefix)
    idx2 = idx.clone()
    idx2[0, 5] = 12
    out2 = model(idx2, prefix)
    assert torch.allclose(out[0, :5], out2[0, :5]) and not torch.allclose(out[0, 5], out2[0, 5])
    assert out.shape[-1] == 40 + T5_SENTINELS


@pytest.mark.slow
def test_t5_trains_packages_and_is_served(tiny_corpus, tmp_path):
    from training.package import package

    t = Trainer(tiny(tiny_corpus, tmp_path / "run", steps=60, eval_interval=30))
    t.fit(log=io.StringIO())
    summary = package([str(tmp_path / "run" / "ckpt.pt")], tmp_path / "set")
    assert summary["t5"]["parity_max_abs_diff"] < 1e-4
    # its attention inspection graph (the mask page's real weights), checked against PyTorch's own mask
    inspection = summary["inspection"]["t5"]["parity"]
    assert inspection["ok"] and inspection["weights"] <= 1e-4 and inspection["row_sums"] <= 1e-5
    assert (tmp_path / "set" / "t5.attn.onnx").exists()
    card = json.loads((tmp_path / "set" / "t5.card.json").read_text())
    assert card["family"] == "t5" and card["attention"] == "prefix" and "span corruption" in card["objective"]
    test = card["evaluation"]["test"]
    # 60 steps of a 1-layer model: above the untrained one on the hidden characters
    assert test["span_char_top1"] > test["random_init"]["span_char_top1"]
    assert test["span_nats_per_char"] < test["random_init"]["span_nats_per_char"]
    assert 0 < test["unigram_baseline"]["span_char_top1"] < 1 and test["span_chars"] > 1000

    import onnxruntime as ort

    from app.contract import Vocab
    from app.contract.checks import check_graph
    from app.tasks.t5 import T5 as Served

    sess = ort.InferenceSession(str(tmp_path / "set" / "t5.onnx"), providers=["CPUExecutionProvider"])
    vocab = Vocab.load(tmp_path / "set" / "vocab.json")
    check_graph("t5", sess, card["config"], vocab.size)
    served = Served(sess, vocab, card["config"])
    served.smoke_test()
    ids, _ = vocab.encode("the king is dead, long live the king")
    out = served.write(ids, [(4, 8), (19, 22)], limit=20)
    assert [s["truth"] for s in out] == ["king", "ong"]
    assert all(0 < c["prob"] <= 1 for s in out for c in s["written"])
    # the served logits are the trained model's
    model = t.model.eval()
    prefix = served.corrupted(ids, [(4, 8)])
    with torch.no_grad():
        want = model(torch.tensor([prefix]), torch.ones(1, len(prefix), dtype=torch.long))[0].numpy()
    assert abs(served.logits(prefix, len(prefix)) - want).max() < 1e-4


@pytest.mark.slow
def test_live_run_trains_and_writes_t5(tiny_corpus, tmp_path):
    """`python -m training live --families t5` (what the Train page starts): the same loop, events and
    set writer as the other families; its live view is the probe line's spans written back."""
    import subprocess
    import sys
    from pathlib import Path

    run_dir = tmp_path / "run"
    overrides = json.dumps({"n_layer": 1, "n_head": 2, "n_embd": 32, "n_ff": 64, "context": 48, "batch_size": 8,
                            "steps": 12, "warmup": 2})
    proc = subprocess.run([sys.executable, "-m", "training", "live", "--out", str(run_dir), "--corpus", str(tiny_corpus),
                           "--families", "t5", "--minutes", "5", "--overrides", overrides],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=600)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert proc.returncode == 0 and events[-1]["event"] == "finished", proc.stdout[-2000:] + proc.stderr[-2000:]
    assert events[-1]["steps"] == {"t5": 12} and "span_char_top1" in events[-1]["metrics"]["t5"]
    samples = [e for e in events if e["event"] == "sample"]
    view = samples[-1]["t5"]
    assert view["spans"] and "⟨0⟩" in view["corrupted"] and view["hidden"] == sum(len(s["truth"]) for s in view["spans"])
    card = json.loads((run_dir / "final" / "t5.card.json").read_text())
    assert card["family"] == "t5" and card["onnx"]["parity_max_abs_diff"] < 1e-4
