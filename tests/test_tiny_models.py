"""The tiny models most app tests serve (tests/conftest.py `build_tiny`): a complete model set,
and a cache keyed by the code that makes them (benchmarks/quick_loop.py runs this file first, so the
quick loop's figure does not include building them)."""
from __future__ import annotations

import json

from tests.conftest import REPO, imported_files


def test_the_tiny_models_are_a_complete_model_set(tiny_models_dir, tiny_runs_dir):
    for name in ("gpt.onnx", "bert.onnx", "gpt.card.json", "bert.card.json", "vocab.json", "nsp_quiz.json"):
        assert (tiny_models_dir / name).is_file(), name
    assert json.loads((tiny_models_dir / "gpt.card.json").read_text())["config"]["n_layer"] == 2
    assert (tiny_runs_dir / "gpt" / "ckpt.pt").is_file() and (tiny_runs_dir / "bert" / "ckpt.pt").is_file()


def test_the_cache_key_follows_the_code_that_builds_them_and_nothing_else():
    files = {str(p.relative_to(REPO)) for p in imported_files()}
    assert {"training/train.py", "training/package.py", "training/model.py", "app/contract/__init__.py"} <= files
    assert "training/objectives.py" in files  # named only as a string in the family table
    assert not any(f.startswith(("training/finetune", "app/routers", "app/classes")) for f in files)
