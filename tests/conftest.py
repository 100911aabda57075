"""Shared fixtures. `tiny_models_dir` trains and packages a tiny GPT and BERT, so app tests exercise
real ONNX files without depending on the shipped models' numbers. Building them takes about a minute
(mostly the ONNX exports), so they are kept in pytest's cache and rebuilt only when the code that
makes them changes (`tiny_build_dir`)."""
from __future__ import annotations

import ast
import contextlib
import fcntl
import hashlib
import importlib.util
import io
import os
import re
import shutil
from importlib.metadata import PackageNotFoundError, version
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


def build_tiny(folder: Path) -> None:
    """folder/corpus (the tiny corpus), folder/runs/{gpt,bert}/ckpt.pt (30 steps each) and
    folder/models (the packaged model set)."""
    from training.package import package
    from training.train import TrainConfig, Trainer

    corpus, runs = write_tiny_corpus(folder / "corpus"), folder / "runs"
    for family, context in (("gpt", 64), ("bert", 64)):
        cfg = TrainConfig(family=family, corpus=str(corpus), out=str(runs / family), n_layer=2, n_head=2,
                          n_embd=32, n_ff=64, context=context, batch_size=8, steps=30, eval_interval=15,
                          eval_batches=2, warmup=5, lr=3e-3)
        with contextlib.redirect_stderr(io.StringIO()):
            Trainer(cfg).fit(log=io.StringIO())
    with contextlib.redirect_stderr(io.StringIO()):
        package([str(runs / "gpt" / "ckpt.pt"), str(runs / "bert" / "ckpt.pt")], folder / "models",
                eval_scale=0.05, quiz_items=20)


TINY_ROOTS = ("training.train", "training.package")  # what build_tiny imports
MODULE_REF = re.compile(r"^(?:training|app)(?:\.\w+)+(?::\w+)?$")  # "training.objectives:CausalLM" in a table


def module_file(name: str) -> Path | None:
    base = REPO.joinpath(*name.split("."))
    return next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)


def imported_files(roots=TINY_ROOTS) -> set[Path]:
    """The repository's Python files that `roots` import, directly or not, read statically (nothing
    is imported): import statements anywhere in a file (lazy ones too), and "module:attribute"
    strings, the family table's way of naming code. A package's __init__ counts for its modules."""
    seen: set[Path] = set()
    todo = [module_file(r) for r in roots]
    while todo:
        path = todo.pop()
        if path is None or path in seen:
            continue
        seen.add(path)
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        package = parts[:-1]
        for node in ast.walk(ast.parse(path.read_bytes())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join([*package[:len(package) - node.level + 1], *([node.module] if node.module else [])]) \
                    if node.level else node.module or ""
                names = [base, *(f"{base}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_REF.match(node.value):
                names = [node.value.split(":")[0]]
            for name in names:
                bits = name.split(".")
                if bits[0] in ("training", "app"):
                    todo += [module_file(".".join(bits[:i])) for i in range(1, len(bits) + 1)]
    return seen


def tiny_fingerprint() -> str:
    """What the tiny models depend on: the code build_tiny imports (`imported_files`, so an edit to
    the fine-tune lab or the app's routers keeps them), this file, the libraries."""
    h = hashlib.sha256()
    for path in sorted([*imported_files(), Path(__file__).resolve()]):
        h.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    for dist in ("torch", "onnx", "onnxscript", "onnxruntime", "numpy"):
        try:
            h.update(f"{dist}={version(dist)}".encode())
        except PackageNotFoundError:
            h.update(f"{dist}=none".encode())
    return h.hexdigest()[:16]


@pytest.fixture(scope="session")
def tiny_build_dir(request, tmp_path_factory) -> Path:
    """The tiny GPT and BERT (`build_tiny`), built once per version of the code that makes them: kept in
    pytest's cache (.pytest_cache/d/tiny-models/<fingerprint>/) and reused by later sessions. Rebuilt
    when the code they are built with (`imported_files`), this file or a library changes, after `--cache-clear`, and in every
    session with PLAYGROUND_TEST_FRESH_MODELS=1 (a fresh machine, as in CI, builds them anyway).
    Tests only read it. Sessions started at once build it once (a file lock)."""
    cache = getattr(request.config, "cache", None)
    if cache is None or os.environ.get("PLAYGROUND_TEST_FRESH_MODELS"):
        folder = tmp_path_factory.mktemp("tiny")
        build_tiny(folder)
        return folder
    folder = cache.mkdir("tiny-models") / tiny_fingerprint()
    complete = folder / "COMPLETE"
    with open(folder.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not complete.exists():
            shutil.rmtree(folder, ignore_errors=True)  # what an interrupted build left
            build_tiny(folder)
            complete.write_text("built by tests/conftest.py build_tiny\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def tiny_runs_dir(tiny_build_dir) -> Path:
    """Checkpoints of a tiny GPT and BERT: <dir>/gpt/ckpt.pt and <dir>/bert/ckpt.pt (read only)."""
    return tiny_build_dir / "runs"


@pytest.fixture(scope="session")
def tiny_models_dir(tiny_build_dir) -> Path:
    """The tiny GPT and BERT as a model set (read only)."""
    return tiny_build_dir / "models"


@pytest.fixture
def standing_clock():
    """The budgets' one clock (app.limits.clock) stands still for the test: time passes only when the
    test says (`standing_clock.advance(s)`), so a budget test never depends on the machine's speed."""
    from app.limits import clock

    clock.stand()
    try:
        yield clock
    finally:
        clock.run()
