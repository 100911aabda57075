"""Every repository path that README.md and docs/*.md name exists, every relative link resolves,
and the README's Layout names real folders and files: a moved or renamed module makes this fail
until the documents follow it."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "training" / "tasks" / "README.md"]
TOP = ("app", "training", "static", "templates", "tests", "benchmarks", "models", "docs", ".ci")
# A path: one of the top folders, then path characters. `<id>`, `{code}` and the like end it (placeholders).
PATH = re.compile(r"(?<![\w/.$-])((?:" + "|".join(re.escape(t) for t in TOP) + r")/[\w/.*-]*)")
FILE_TYPES = {"py", "md", "json", "jsonl", "onnx", "html", "js", "css", "toml", "txt", "svg", "pt", "csv"}
LINK = re.compile(r"\]\(([^)\s]+)\)")


def named_paths(text: str) -> set[str]:
    found = set()
    for m in PATH.finditer(text):
        path = m.group(1).rstrip(".,;:")
        last = path.rstrip("/").rsplit("/", 1)[-1]
        if "." in last and last.rsplit(".", 1)[1] not in FILE_TYPES:
            continue                              # a dotted Python name (app/registry.ModelSet), not a file
        found.add(path)
    return found


def exists(path: str, under: Path = REPO) -> bool:
    return any(under.glob(path.rstrip("/"))) if "*" in path else (under / path).exists()


def output_folder(path: str) -> bool:
    """A place the code writes and git ignores (screenshots, runs): named before it exists."""
    done = subprocess.run(["git", "check-ignore", "-q", path], cwd=REPO, capture_output=True)
    return done.returncode == 0


def test_the_path_finder_sees_paths_and_skips_dotted_names():
    text = "see `app/contract/`, training/train.py, models/*.card.json and app/registry.ModelSet; runs/x.py"
    assert named_paths(text) == {"app/contract/", "training/train.py", "models/*.card.json"}
    assert not exists("app/contract.py") and exists("models/*.card.json") and exists("app/contract/")
    assert output_folder("runs/gpt/") and not output_folder("app/contract.py")


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_named_path_exists(doc):
    missing = sorted(p for p in named_paths(doc.read_text(encoding="utf-8")) if not exists(p) and not output_folder(p))
    assert not missing, f"{doc.relative_to(REPO)} names paths that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(doc):
    links = [t.split("#")[0] for t in LINK.findall(doc.read_text(encoding="utf-8"))
             if not re.match(r"[a-z]+:", t) and not t.startswith("#")]
    broken = sorted(t for t in links if t and not (doc.parent / t).exists())
    assert not broken, f"{doc.relative_to(REPO)} links to missing files: {broken}"


def layout() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"^## Layout\n+```\n(.*?)\n```", text, re.S | re.M)
    assert block, "README.md has no '## Layout' code block"
    return block.group(1).splitlines()


def test_the_layout_names_real_folders_and_files():
    """A line at the left names a top folder; indented lines name what is inside it. Every word that
    looks like a file or folder (`main.py`, `routers/`, `*.onnx`) must be found there (at any depth),
    or, for a folder, at the top of the repository."""
    missing, top = [], None
    for line in layout():
        if not line.strip():
            continue
        if not line.startswith(" "):
            top = REPO / line.split()[0]
            assert top.is_dir(), f"Layout names a top folder that does not exist: {line.split()[0]}"
        for word in re.findall(r"[\w.*-]+(?:/|\.[a-z0-9]+)(?![\w])", line):
            if line.startswith(word) and not line.startswith(" "):
                continue
            name = word.rstrip("/")
            here = any(top.glob("**/" + name)) or (word.endswith("/") and (REPO / name).is_dir())
            if not here:
                missing.append(f"{top.name}/ ... {word}")
    assert not missing, f"README.md's Layout names what is not there: {missing}"


def test_the_layout_lists_every_top_folder():
    tracked = {p.name for p in REPO.iterdir() if p.is_dir() and p.name in TOP}
    named = {line.split()[0].rstrip("/") for line in layout() if line.strip() and not line.startswith(" ")}
    assert tracked - {".ci"} <= named, f"README.md's Layout leaves out {sorted(tracked - {'.ci'} - named)}"
