"""training/inspect_export.py: a model rebuilt from its exported ONNX file has the checkpoint's
weights, and the inspection graph's weights match PyTorch's (<= 1e-4), rows summing to 1."""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from app.contract import SPECS  # noqa: E402
from tests.family_set import family_set_dir  # noqa: E402,F401 (the fixture: every family, tiny)
from training.families import FAMILIES  # noqa: E402
from training.inspect_export import PARITY_TOLERANCE, check_inspection, model_from_onnx  # noqa: E402
from training.train import load_checkpoint  # noqa: E402


INSPECTED = [name for name, f in FAMILIES.items() if f.inspected]  # the families whose entry asks for the graph


@pytest.mark.parametrize("family", INSPECTED)
def test_rebuilt_from_onnx_equals_the_checkpoint(family_set_dir, family):  # noqa: F811
    _, ckpt_model, _, _ = load_checkpoint(family_set_dir / "runs" / family / "ckpt.pt")
    rebuilt, diff = model_from_onnx(family_set_dir / "models", family)
    assert diff <= PARITY_TOLERANCE
    ref = ckpt_model.state_dict()
    got = rebuilt.state_dict()
    assert set(got) == set(ref)
    shift = 0.0
    if SPECS[family].uses_nsp:  # package folds NSP's threshold into the IsNext bias (training/nsp_calibration.py)
        card = json.loads((family_set_dir / "models" / f"{family}.card.json").read_text())
        shift = card["nsp_calibration"]["isnext_bias_shift"]
        ref = {**ref, "nsp_head.bias": ref["nsp_head.bias"] - torch.tensor([shift, 0.0])}
    for name, value in ref.items():
        if name == "nsp_head.bias":
            assert torch.allclose(got[name], value, atol=1e-5), name
        else:
            assert torch.equal(got[name], value), name


@pytest.mark.parametrize("family", INSPECTED)
def test_packaged_inspection_graph_matches_pytorch(family_set_dir, family):  # noqa: F811
    _, model, tok, _ = load_checkpoint(family_set_dir / "runs" / family / "ckpt.pt")
    report = check_inspection(model, family, family_set_dir / "models" / f"{family}.attn.onnx", tok.vocab_size, seed=5)
    assert report["ok"] and report["weights"] <= 1e-4 and report["row_sums"] <= 1e-5
    written = json.loads((family_set_dir / "models" / "inspection.json").read_text())
    assert written[family]["parity"]["ok"] and written[family]["source"].startswith("checkpoint")
