"""How many times a model family is named in code outside its own files (issue 40's measure of
"a family is declared once"). A family's own files: its spec (app/contract/families.py), its
serving task (app/tasks/<name>.py), its page pieces (static/families/<name>.js and their index),
and the trainer's side (its entry, training/families/<name>.py, and a model file named after it, e.g.
training/electra.py). Everything else in app/, training/, static/ and templates/ that quotes a
family's name ("gpt", 'bert', `electra`) is counted: each is a place a new family would have to be
added by hand, or a page that knows a family by name.

    python -m benchmarks.family_names            # the total, then the files, most names first
    python -m benchmarks.family_names --total    # the total only
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AREAS = ("app", "training", "static", "templates")
SUFFIXES = (".py", ".js", ".html")


def own_files(names) -> set[Path]:
    own = {ROOT / "app" / "contract" / "families.py", ROOT / "training" / "families" / "__init__.py",
           ROOT / "static" / "families" / "index.js"}
    for n in names:
        own |= {ROOT / "app" / "tasks" / f"{n}.py", ROOT / "static" / "families" / f"{n}.js",
                ROOT / "training" / f"{n}.py", ROOT / "training" / "families" / f"{n}.py"}
    return own


def count(root: Path = ROOT) -> dict[str, int]:
    """{file relative to the root: quoted family names in it}, for files outside the families' own."""
    sys.path.insert(0, str(root))
    from app.contract import FAMILIES

    quoted = re.compile(r"""["'`](%s)["'`]""" % "|".join(map(re.escape, FAMILIES)))
    own = own_files(FAMILIES)
    out = {}
    for area in AREAS:
        for path in sorted((root / area).rglob("*")):
            if path.suffix not in SUFFIXES or path in own or "vendor" in path.parts or not path.is_file():
                continue
            n = len(quoted.findall(path.read_text(encoding="utf-8", errors="replace")))
            if n:
                out[str(path.relative_to(root))] = n
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.family_names", description=__doc__.split("\n\n")[0])
    ap.add_argument("--total", action="store_true", help="print the total only")
    args = ap.parse_args(argv)
    found = count()
    print(f"{sum(found.values())} family names in {len(found)} files outside the families' own files")
    if not args.total:
        for file, n in sorted(found.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"{n:4d}  {file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
