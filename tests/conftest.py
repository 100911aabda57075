"""Shared fixtures. `tiny_models_dir` trains and packages a tiny GPT and BERT in seconds, so app
tests exercise real ONNX files without depending on the shipped models' numbers."""
from __future__ import annotations

import contextlib
import importlib.util
import io
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHIPPED_MODELS = REPO / "models"
CHROMIUM = Path("/usr/bin/chromium")  # Debian's package; Playwright cannot download its own browser here
BROWSER_TESTS = Path(__file__).parent / "browser"


def browser_missing() -> str | None:
    """Why browser tests cannot run here, or None."""
    if not CHROMIUM.exists():
        return "Debian's chromium is not installed (/usr/bin/chromium; `apt-get install -y chromium`)"
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (pip install -e '.[test]')"
    return None


def pytest_collection_modifyitems(config, items):
    """Every test under tests/browser/ is marked `browser` (so `-m "not browser"` never starts
    Chromium), and the one Chromium guard: browser tests are skipped, saying why, where it is missing."""
    why = browser_missing()
    for item in items:
        if BROWSER_TESTS in Path(item.path).parents:
            item.add_marker(pytest.mark.browser)
        if why and item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.skip(reason=why))


def write_tiny_corpus(folder: Path) -> Path:
    """Five small 'plays' with distinct vocabularies, enough for NSP negatives and a held-out split."""
    folder.mkdir(parents=True, exist_ok=True)
    themes = ["the king and the crown", "a ship upon the sea", "love in the garden",
              "war and the sword", "the ghost at night"]
    for i, theme in enumerate(themes):
        lines = []
        for j in range(60):
            # Lines fit the tiny BERT's context (64) with a speaker's name: the NSP quiz is made of whole lines.
            lines.append(f"SPEAKER{i}.\nLine {j} speaks of {theme}, again!\n")
        (folder / f"play{i}.txt").write_text("\n".join(lines), encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory) -> Path:
    return write_tiny_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="session")
def tiny_runs_dir(tmp_path_factory, tiny_corpus) -> Path:
    """Checkpoints of a tiny GPT and BERT: <dir>/gpt/ckpt.pt and <dir>/bert/ckpt.pt."""
    from training.train import TrainConfig, Trainer

    runs = tmp_path_factory.mktemp("runs")
    for family, context in (("gpt", 64), ("bert", 64)):
        cfg = TrainConfig(family=family, corpus=str(tiny_corpus), out=str(runs / family), n_layer=2, n_head=2,
                          n_embd=32, n_ff=64, context=context, batch_size=8, steps=30, eval_interval=15,
                          eval_batches=2, warmup=5, lr=3e-3)
        with contextlib.redirect_stderr(io.StringIO()):
            Trainer(cfg).fit(log=io.StringIO())
    return runs


@pytest.fixture(scope="session")
def tiny_models_dir(tmp_path_factory, tiny_runs_dir) -> Path:
    from training.package import package

    runs = tiny_runs_dir
    out = tmp_path_factory.mktemp("models")
    with contextlib.redirect_stderr(io.StringIO()):
        package(str(runs / "gpt" / "ckpt.pt"), str(runs / "bert" / "ckpt.pt"), out,
                eval_pairs=100, eval_chars=5000, quiz_items=20)
    return out
