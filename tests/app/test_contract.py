"""app/contract/ states the ONNX contract on the app side; it must match training/'s."""
from __future__ import annotations

import onnxruntime as ort

from app import contract
from training import export, tokenizer


def test_specials_and_names_match_the_exporter(tiny_models_dir):
    assert contract.SPECIALS == tokenizer.SPECIALS
    assert (contract.PAD, contract.UNK, contract.MASK, contract.CLS, contract.SEP) == (
        tokenizer.PAD, tokenizer.UNK, tokenizer.MASK, tokenizer.CLS, tokenizer.SEP)
    for n in (1, 2, 4):
        assert contract.cache_names(n) == export.cache_names(n)
        assert contract.cache_names(n, "present") == export.cache_names(n, "present")


def test_exported_graphs_have_the_contract_names(tiny_models_dir, models):
    gpt = ort.InferenceSession(str(tiny_models_dir / "gpt.onnx"))
    for name in ("gpt", "bert"):  # the names every exported graph carries are its family spec's
        graph = ort.InferenceSession(str(tiny_models_dir / f"{name}.onnx"))
        n_layer = getattr(models, name).config["n_layer"]
        assert ([i.name for i in graph.get_inputs()], [o.name for o in graph.get_outputs()]) == \
            contract.SPECS[name].io(n_layer)
    past = next(i for i in gpt.get_inputs() if i.name == "past_key_0")
    assert list(past.shape[1:]) == contract.cache_shape(models.gpt.config)[1:]
