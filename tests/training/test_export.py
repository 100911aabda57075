import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from app.contract import SPECS
from tests.family_set import family_set_dir  # noqa: F401 (the fixture: every family, tiny)
from training.evaluate import evaluate_checkpoint
from training.export import check_parity, export_checkpoint
from training.tokenizer import CharTokenizer
from training.train import load_checkpoint

SHIPPED_MODELS = Path(__file__).resolve().parents[2] / "models"


def test_tiny_models_dir_holds_the_contract(tiny_models_dir):
    names = {p.name for p in tiny_models_dir.iterdir()}
    assert {"gpt.onnx", "bert.onnx", "vocab.json", "gpt.card.json", "bert.card.json", "nsp_quiz.json"} <= names
    card = json.loads((tiny_models_dir / "bert.card.json").read_text())
    assert card["attention"] == "bidirectional" and card["curves"] and card["parameters"] > 0
    ev = card["evaluation"]["test"]
    assert {"masked_top1", "masked_top5", "nsp_accuracy", "random_init", "unigram_baseline"} <= set(ev)
    quiz = json.loads((tiny_models_dir / "nsp_quiz.json").read_text())["items"]
    assert sum(q["is_next"] for q in quiz) == len(quiz) // 2
    assert all(q["source_a"] != q["source_b"] for q in quiz if not q["is_next"])


@pytest.mark.slow
@pytest.mark.parametrize("family", list(SPECS))
def test_onnx_parity_at_several_lengths(family_set_dir, family, tmp_path):  # noqa: F811
    ckpt = family_set_dir / "runs" / family / "ckpt.pt"
    report = export_checkpoint(ckpt, tmp_path)
    parity = report["parity"]
    assert {"len_1", "len_7", "len_64"} <= set(parity)
    assert parity["ok"] and parity["max_abs_diff"] <= 1e-4
    if SPECS[family].cached:  # a decoding graph: one character at a time equals the full forward
        assert parity["cached_decoding"] <= 1e-4
    # parity must catch a broken file: a different model's weights do not match
    _, model, tok, _ = load_checkpoint(ckpt)
    with_noise = model
    for p in with_noise.parameters():
        p.data.add_(0.05)
    assert not check_parity(family, with_noise, tmp_path / f"{family}.onnx", tok.vocab_size)["ok"]


def test_bert_evaluation_reports_baselines(tiny_runs_dir):
    ckpt = tiny_runs_dir / "bert" / "ckpt.pt"
    result = evaluate_checkpoint(ckpt, split="test", n_pairs=100)
    for key in ("masked_top1", "masked_top5"):
        for r in (result, result["random_init"], result["unigram_baseline"]):
            assert 0 <= r[key] <= 1
    assert result["masked_top5"] >= result["masked_top1"]
    assert 0 <= result["nsp_accuracy"] <= 1 and result["nsp_pairs"] == 100


@pytest.mark.skipif(not (SHIPPED_MODELS / "gpt.onnx").exists(), reason="models not shipped yet")
def test_shipped_models_load_and_share_the_vocabulary():
    tok = CharTokenizer.load(SHIPPED_MODELS / "vocab.json")
    for name in ("gpt", "bert"):
        path = SHIPPED_MODELS / f"{name}.onnx"
        assert path.stat().st_size < 10 * 1024 * 1024
        card = json.loads((SHIPPED_MODELS / f"{name}.card.json").read_text())
        assert card["config"]["vocab_size"] == tok.vocab_size
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        ids = np.array([tok.encode("To be, or not to be")], dtype=np.int64)
        if name == "gpt":
            cfg = card["config"]
            cache = np.zeros((1, cfg["n_head"], cfg["context"], cfg["n_embd"] // cfg["n_head"]), np.float32)
            feeds = {f"past_{kind}_{i}": cache for i in range(cfg["n_layer"]) for kind in ("key", "value")}
            logits = sess.run(["logits"], {"input_ids": ids, "past_length": np.array(0), **feeds})[0]
        else:
            logits = sess.run(["mlm_logits"], {"input_ids": ids, "token_type_ids": np.zeros_like(ids)})[0]
        assert logits.shape == (1, ids.shape[1], tok.vocab_size)
