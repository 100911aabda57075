"""ELECTRA: the generator fills every masked position, the discriminator learns original vs
replaced, and electra.onnx agrees with PyTorch (through `package`, the one model-set writer)."""
import io
import json

import pytest
import torch

from training.electra import ELECTRA, ReplacedTokenDetection, detect, generator_config, roc_auc
from training.model import TransformerConfig
from training.tokenizer import MASK
from training.train import TrainConfig, Trainer


def tiny(corpus, out, **kw):
    return TrainConfig(**{**dict(family="electra", corpus=str(corpus), out=str(out), n_layer=1, n_head=2, n_embd=32,
                                 n_ff=64, context=32, batch_size=8, steps=40, eval_interval=20, eval_batches=2,
                                 warmup=5, lr=3e-3, threads=1), **kw})


def test_generator_is_a_quarter_width_one_layer():
    g = generator_config(TransformerConfig(vocab_size=40, n_layer=3, n_head=4, n_embd=96, n_ff=256))
    assert (g.n_embd, g.n_head, g.n_ff, g.n_layer) == (24, 1, 64, 1)


def test_roc_auc_counts_ties_half():
    assert roc_auc(torch.tensor([0.1, 0.4, 0.35, 0.8]), torch.tensor([0, 0, 1, 1])) == 0.75
    assert roc_auc(torch.tensor([1.0, 1.0, 1.0, 1.0]), torch.tensor([0, 0, 1, 1])) == 0.5
    assert roc_auc(torch.tensor([0.0, 1.0]), torch.tensor([0, 1])) == 1.0


def test_init_from_bert_copies_the_encoder_and_its_vocabulary(tiny_runs_dir, tiny_corpus, tmp_path):
    state = torch.load(tiny_runs_dir / "bert" / "ckpt.pt", weights_only=False)
    mc = state["model_config"]
    cfg = tiny(tiny_corpus, tmp_path, n_layer=mc["n_layer"], n_head=mc["n_head"], n_embd=mc["n_embd"],
               n_ff=mc["n_ff"], context=mc["context"], init_from=str(tiny_runs_dir / "bert" / "ckpt.pt"))
    t = Trainer(cfg)
    assert t.tok.chars == state["vocab"]["chars"]
    mine = t.model.discriminator.transformer.state_dict()
    for k, v in state["model"].items():
        if k.startswith("transformer."):
            assert torch.equal(mine[k.removeprefix("transformer.")], v), k


def test_init_from_refuses_another_size(tiny_runs_dir, tiny_corpus, tmp_path):
    import pytest

    with pytest.raises(ValueError, match="size"):
        Trainer(tiny(tiny_corpus, tmp_path, n_embd=48, init_from=str(tiny_runs_dir / "bert" / "ckpt.pt")))


def test_every_masked_position_is_filled_by_the_generator(tiny_corpus, tmp_path):
    t = Trainer(tiny(tiny_corpus, tmp_path))
    obj: ReplacedTokenDetection = t.objective
    batch = obj.batch(t.train_data, 8, torch.Generator().manual_seed(0))
    sel = batch["selected"]
    assert sel.any()
    logits, _ = t.model.generator(torch.where(sel, MASK, batch["ids"]), batch["segments"])
    fill = (logits + batch["gumbel"]).masked_fill(torch.arange(logits.size(-1)) < t.tok.first_char_id, float("-inf")).argmax(-1)
    assert (fill[sel] >= t.tok.first_char_id).all()  # a character, never [MASK] or another special
    loss, parts = obj.loss(t.model, batch)
    assert set(parts) == {"loss", "mlm", "rtd"} and torch.isfinite(loss)


@pytest.mark.slow
def test_short_run_lowers_the_detection_loss(tiny_corpus, tmp_path):
    t = Trainer(tiny(tiny_corpus, tmp_path, steps=60, eval_interval=30))
    before = t.evaluate()
    t.fit(log=io.StringIO())
    after = t.history[-1]
    assert after["val_rtd"] < before["rtd"] and after["val_mlm"] < before["mlm"] - 0.3


def test_detect_marks_every_filled_position(tiny_corpus, tmp_path):
    from training.tokenizer import CharTokenizer

    tok = CharTokenizer([chr(c) for c in range(32, 127)])
    model = ELECTRA(TransformerConfig(vocab_size=tok.vocab_size, context=32, n_layer=1, n_head=2, n_embd=32, n_ff=64)).eval()
    out = detect(model, tok, "the king and the crown", [1, 5, 9])
    assert len(out["p_replaced"]) == len(out["text"]) == len(out["corrupted"])
    assert set(out["replaced"]) <= {1, 5, 9}  # only filled positions can differ from the text
    assert all(out["corrupted"][i] == out["text"][i] for i in range(len(out["text"])) if i not in (1, 5, 9))


@pytest.mark.slow
def test_package_writes_electra_onnx_and_card(tiny_corpus, tmp_path):
    from training.package import package

    Trainer(tiny(tiny_corpus, tmp_path / "run", steps=6, eval_interval=6)).fit(log=io.StringIO())
    summary = package([str(tmp_path / "run" / "ckpt.pt")], tmp_path / "set")
    assert summary["electra"]["parity_max_abs_diff"] < 1e-4
    card = json.loads((tmp_path / "set" / "electra.card.json").read_text())
    assert card["family"] == "electra" and card["onnx"]["file"] == "electra.onnx"
    assert "replaced-token detection" in card["objective"] and "detection_accuracy" in card["evaluation"]["test"]
    import onnxruntime as ort

    sess = ort.InferenceSession(str(tmp_path / "set" / "electra.onnx"), providers=["CPUExecutionProvider"])
    assert [o.name for o in sess.get_outputs()] == ["replaced_logits"]
    from app.contract import Vocab
    from app.contract.checks import check_graph

    check_graph("electra", sess, card["config"], Vocab.load(tmp_path / "set" / "vocab.json").size)


@pytest.mark.slow
def test_live_run_trains_and_writes_electra(tiny_corpus, tmp_path):
    """`python -m training live --families electra`: the same loop, events and set writer as GPT and BERT."""
    import subprocess
    import sys
    from pathlib import Path

    run_dir = tmp_path / "run"
    overrides = json.dumps({"n_layer": 1, "n_head": 2, "n_embd": 32, "n_ff": 64, "context": 32, "batch_size": 8,
                            "steps": 12, "warmup": 2})
    proc = subprocess.run([sys.executable, "-m", "training", "live", "--out", str(run_dir), "--corpus", str(tiny_corpus),
                           "--families", "electra", "--minutes", "5", "--overrides", overrides],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=600)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert proc.returncode == 0 and events[-1]["event"] == "finished", proc.stdout[-2000:]
    assert events[-1]["steps"] == {"electra": 12} and "detection_accuracy" in events[-1]["metrics"]["electra"]
    samples = [e for e in events if e["event"] == "sample"]
    assert samples and "p_replaced" in samples[-1]["electra"]
    card = json.loads((run_dir / "final" / "electra.card.json").read_text())
    assert card["family"] == "electra" and card["onnx"]["parity_max_abs_diff"] < 1e-4
