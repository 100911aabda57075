"""A model set holding every family the specs declare (app/contract/families.py), each a tiny model
trained a few steps and packaged with parity, for the family contract's checks
(tests/app/test_family_contract.py, tests/browser/test_family_pieces.py).

It starts from the tiny set (tests/conftest.py build_tiny: GPT and BERT, 30 steps each, packaged the
same way) and trains the other families on the same corpus, so a new family's spec is all it takes
to be checked. Kept in pytest's cache beside the tiny set, under the same fingerprint (the code the
trainer and `package` import, the family entries' modules included), and rebuilt when it changes."""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import shutil
from pathlib import Path

import pytest

from app.contract import SPECS, card_file

STEPS = 10  # a few steps: the contract is that it trains and packages, not how well


def tiny_config(family: str, corpus: Path, out: Path):
    from training.train import TrainConfig

    return TrainConfig(family=family, corpus=str(corpus), out=str(out), n_layer=2, n_head=2, n_embd=32, n_ff=64,
                       context=64, batch_size=8, steps=STEPS, eval_interval=STEPS, eval_batches=1, warmup=2, lr=3e-3,
                       threads=1)


def build_family_set(folder: Path, tiny_build: Path) -> None:
    """folder/models: the tiny set plus every other family; folder/runs/<family>/ckpt.pt for each."""
    from training.package import package
    from training.train import Trainer

    models, runs = folder / "models", folder / "runs"
    shutil.copytree(tiny_build / "models", models)
    shutil.copytree(tiny_build / "runs", runs)
    added = []
    for name in SPECS:
        if (models / card_file(name)).is_file():
            continue
        with contextlib.redirect_stderr(io.StringIO()):
            Trainer(tiny_config(name, tiny_build / "corpus", runs / name)).fit(log=io.StringIO())
        added.append(str(runs / name / "ckpt.pt"))
    with contextlib.redirect_stderr(io.StringIO()):
        package(added, models, eval_scale=0.02)


def family_set(request, tiny_build: Path, tmp_path_factory) -> Path:
    """The built folder (models/, runs/), from pytest's cache when the code is unchanged; read only."""
    cache = getattr(request.config, "cache", None)
    if cache is None or os.environ.get("PLAYGROUND_TEST_FRESH_MODELS"):
        folder = tmp_path_factory.mktemp("families")
        build_family_set(folder, tiny_build)
        return folder
    own = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:8]
    folder = cache.mkdir("family-sets") / f"{tiny_build.name}-{own}"  # the tiny set's fingerprint and this file's
    complete = folder / "COMPLETE"
    with open(folder.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not complete.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            build_family_set(folder, tiny_build)
            complete.write_text("built by tests/family_set.py\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def family_set_dir(request, tiny_build_dir, tmp_path_factory) -> Path:
    """The fixture: `from tests.family_set import family_set_dir` in a test module that needs it."""
    return family_set(request, tiny_build_dir, tmp_path_factory)
