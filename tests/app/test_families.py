"""A family is declared once (app/contract/families.py): the server hands the specs to the browser,
and every spec has its files on each side, named by it."""
from __future__ import annotations

import importlib
import re
import subprocess
import sys

from app.config import REPO
from app.contract import FAMILIES, SPECS, onnx_io


def test_the_browser_learns_the_families_from_the_server(client):
    listed = client.get("/api/families")
    assert listed.status_code == 200
    families = listed.json()["families"]
    assert [f["name"] for f in families] == list(FAMILIES)
    assert client.get("/api/models").json()["families"] == families  # the pages' one request carries them too
    for f in families:
        spec = SPECS[f["name"]]
        assert (f["label"], f["objective"], f["trainable"], f["optional"]) == (spec.label, spec.objective,
                                                                              spec.trainable, spec.optional)
        assert f["script"] == f"/static/families/{spec.name}.js" and client.get(f["script"]).status_code == 200
        assert "task" not in f and "inputs" not in f  # code references stay on the server


def test_every_family_has_its_files_on_each_side():
    index = (REPO / "static" / "families" / "index.js").read_text(encoding="utf-8")
    from training.families import FAMILIES as ENTRIES

    assert list(ENTRIES) == list(FAMILIES)  # the trainer's table and the contract agree, in order
    for name, spec in SPECS.items():
        module, _, cls = spec.task.partition(":")
        assert module == f"app.tasks.{name}" and callable(getattr(getattr(importlib.import_module(module), cls),
                                                                   "smoke_test", None))
        assert (REPO / "training" / "families" / f"{name}.py").is_file()
        assert re.search(rf'^import {name} from "\./{name}\.js";$', index, re.M), name  # its one registration line
        assert onnx_io(name, 2) == spec.io(2)


def test_the_count_of_family_names_is_printed_and_adds_up():
    out = subprocess.run([sys.executable, "-m", "benchmarks.family_names"], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    head, *rows = out.stdout.splitlines()
    total, files = map(int, re.match(r"(\d+) family names in (\d+) files", head).groups())
    counts = {line.split()[1]: int(line.split()[0]) for line in rows}
    assert sum(counts.values()) == total and len(counts) == files
    own = {"app/contract/families.py", "training/families/gpt.py", "app/tasks/bert.py", "static/families/electra.js"}
    assert not own & counts.keys()  # a family's own files are not counted
