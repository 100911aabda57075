"""training/inspect_export.py: a model rebuilt from its exported ONNX file has the checkpoint's
weights, and the inspection graph's weights match PyTorch's (<= 1e-4), rows summing to 1."""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from training.inspect_export import PARITY_TOLERANCE, check_inspection, model_from_onnx  # noqa: E402
from training.train import load_checkpoint  # noqa: E402


@pytest.mark.parametrize("family", ["gpt", "bert"])
def test_rebuilt_from_onnx_equals_the_checkpoint(tiny_models_dir, tiny_runs_dir, family):
    _, ckpt_model, _, _ = load_checkpoint(tiny_runs_dir / family / "ckpt.pt")
    rebuilt, diff = model_from_onnx(tiny_models_dir, family)
    assert diff <= PARITY_TOLERANCE
    ref = ckpt_model.state_dict()
    got = rebuilt.state_dict()
    assert set(got) == set(ref)
    shift = 0.0
    if family == "bert":  # package folds NSP's threshold into the IsNext bias (training/nsp_calibration.py)
        import json

        card = json.loads((tiny_models_dir / "bert.card.json").read_text())
        shift = card["nsp_calibration"]["isnext_bias_shift"]
        ref = {**ref, "nsp_head.bias": ref["nsp_head.bias"] - torch.tensor([shift, 0.0])}
    for name, value in ref.items():
        if name == "nsp_head.bias":
            assert torch.allclose(got[name], value, atol=1e-5), name
        else:
            assert torch.equal(got[name], value), name


@pytest.mark.parametrize("family", ["gpt", "bert"])
def test_packaged_inspection_graph_matches_pytorch(tiny_models_dir, tiny_runs_dir, family):
    _, model, tok, _ = load_checkpoint(tiny_runs_dir / family / "ckpt.pt")
    report = check_inspection(model, family, tiny_models_dir / f"{family}.attn.onnx", tok.vocab_size, seed=5)
    assert report["ok"] and report["weights"] <= 1e-4 and report["row_sums"] <= 1e-5
    written = json.loads((tiny_models_dir / "inspection.json").read_text())
    assert written[family]["parity"]["ok"] and written[family]["source"].startswith("checkpoint")
