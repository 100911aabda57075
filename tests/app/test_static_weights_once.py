"""A static copy holds each family's weights once (issue 54 must 3): no two files of
`python -m app export-static` hold the same family's weights, with float32 copies (the default) or
float16 ones (`--weights fp16`). A family's served graph and its attention graph read one weights
file (training/export/web.py `shared`); a family without web copies (ELECTRA) ships its served graph
alone. Looked for as bytes: each large tensor of the family's served graph (float32, and rounded to
float16 as the half-precision copies store it) must be inside exactly one file of the copy (a .gz
unpacked), whatever that file is called."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from app.contract import SPECS
from app.static_build import export
from tests.family_set import family_set_dir  # noqa: F401 (the fixture: every family, tiny)

MIN_BYTES = 1024  # smaller tensors (a layer norm's ones, a short bias) may well be equal across families


def tensors(graph: Path) -> list[tuple[bytes, bytes]]:
    """(float32 bytes, float16 bytes) of each large, varied float tensor of a served graph."""
    out = []
    for init in onnx.load(str(graph)).graph.initializer:
        if init.data_type != onnx.TensorProto.FLOAT:
            continue
        w = numpy_helper.to_array(init)
        if w.nbytes >= MIN_BYTES and len(np.unique(w)) > 16:  # not a run of zeros or ones another file may hold
            out.append((w.tobytes(), w.astype(np.float16).tobytes()))
    return out


def contents(folder: Path) -> dict[str, bytes]:
    """Every file of a folder as the browser reads it: a .gz unpacked."""
    return {str(p.relative_to(folder)): gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def holders(tensor: tuple[bytes, bytes], files: dict[str, bytes]) -> list[str]:
    return [name for name, data in files.items() if any(form in data for form in tensor)]


@pytest.fixture(scope="module")
def exports(family_set_dir, tmp_path_factory):  # noqa: F811
    """The family set's static copy, float32 and float16, written once each: (files, manifest)."""
    done = {}
    for weights in ("fp32", "fp16"):
        out = tmp_path_factory.mktemp("static") / weights
        export(out, family_set_dir / "models", weights=weights)
        manifest = json.loads((out / "web" / "models" / "default" / "manifest.json").read_text())
        done[weights] = (contents(out), manifest)
    return done


@pytest.mark.parametrize("weights", ["fp32", "fp16"])
@pytest.mark.parametrize("family", list(SPECS))
def test_no_two_files_of_a_static_copy_hold_a_familys_weights(exports, family_set_dir, family, weights):  # noqa: F811
    files, manifest = exports[weights]
    assert family in manifest["models"], f"the copy ships no {family}"
    served = family_set_dir / "models" / f"{family}.onnx"
    found = tensors(served)
    assert len(found) >= 4 and all(holders(t, {"served": served.read_bytes()}) == ["served"] for t in found)  # the search finds them
    where = [holders(t, files) for t in found]
    assert all(len(w) == 1 for w in where), {family: sorted({n for w in where if len(w) != 1 for n in w})}
    # and the files that hold them are the ones the manifest names for the family (its graphs' weights)
    named = {p for key, part in manifest["models"].items() if key in (family, family + "_attn")
             for p in [part["packed"]] + ([part["weights"]["packed"]] if "weights" in part else [])}
    assert {Path(w[0]).name for w in where} <= {Path(p).name for p in named}
