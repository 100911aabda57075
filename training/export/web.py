"""Web copies of a model set: what the browser's engine (static/lib/engine.js) downloads.

For each family whose entry names a `web_check` (training/families/: GPT, BERT, T5 and PLM) a copy of
its served graph whose float weights are stored as float16 (half the bytes) behind a Cast to float32:
onnxruntime folds the Casts when it loads the graph, so it then computes in float32 exactly as the
server does, only from rounded weights. The copy is checked against the float32 graph before it is
kept, by the family's own check (training/export/web_checks.py: GPT's texts, BERT's and PLM's
probabilities, T5's written spans; and the attention graph's weights where the set has one).

A copy that fails keeps float32 weights (a bigger download, the same answers); its float16 copy is
still written beside it (the manifest's "fp16" entry, with the check's figures), for a static copy
whose maker asks for the smaller download (`python -m app export-static --weights fp16`: seeded texts
may then differ from the server's in rare steps, at the rate the check measured). Each file is named
by its content hash (gpt.<hash>.onnx: a URL that never changes meaning, so browsers may cache it
for ever) and written with a gzip copy beside it (.gz, level 9, once: never per request).
`web/manifest.json` lists them with what the engine needs to run them without the server:
the vocabulary, each model's config, the sizes and the check.

Where the set has a family's attention inspection graph (<family>.attn.onnx, the attention page's),
the two graphs share ONE weights file (issues 44 and 54: the inspection graph's tensors are the plain
graph's): the plain copy's every tensor moves into <family>_weights.<hash>.bin, and
<family>_attn.<hash>.onnx reads from it every tensor that is the same (type, shape and bytes),
keeping only its own; both name it WEIGHTS_LOCATION, which the browser's engine hands
onnxruntime-web as external data (static/lib/engine.js). So no family's weights are in two files:
the float32 pair shares one file, and the float16 pair (the "fp16" entries of both) another, which a
static copy ships instead of it, never beside it. A student who opened Generation and Mask-Fill then
downloads only the attention graphs' structure for The mask.

`python -m training web-copies FOLDER...` adds them to existing set folders (the writer of new
sets, training/export/model_set.py, calls `write_web_copies` itself).
"""
from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from app.contract import VOCAB_FILE, card_file, onnx_file, write_json

from ..families import FAMILIES, family
from .web_checks import check_attention, check_gpt, gpt_text  # noqa: F401 (check_gpt, gpt_text: for their readers)

WEB_DIR, MANIFEST = "web", "manifest.json"
FORMAT = 2  # 2: a float16 alternative shares one weights file with its attention graph too
ATTN = "_attn"  # the manifest key of a family's inspection graph (app/static_build.py names it the same)
WEIGHTS_LOCATION = "weights.bin"  # what both graphs call their shared weights file (external data)
SHARE_MIN_BYTES = 64  # smaller tensors (scalars, shapes) stay inside their graph


def web_families() -> tuple[str, ...]:
    """The families the browser's engine runs: those whose entry names an fp16 check (training/families/)."""
    return tuple(n for n, f in FAMILIES.items() if f.web_check)


FP16_MAX = 65504.0


def fp16_graph(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` whose float32 initializers are stored as float16, each behind a Cast."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    casts, kept = [], []
    for init in graph.initializer:
        if init.data_type != TensorProto.FLOAT:
            kept.append(init)
            continue
        w = numpy_helper.to_array(init)
        if w.size < 2 or not np.all(np.isfinite(w)) or np.abs(w).max(initial=0) > FP16_MAX:
            kept.append(init)  # scalars and out-of-range weights stay float32
            continue
        half = numpy_helper.from_array(w.astype(np.float16), init.name + "__fp16")
        kept.append(half)
        casts.append(helper.make_node("Cast", [half.name], [init.name], to=TensorProto.FLOAT,
                                      name=init.name + "__cast"))
    del graph.initializer[:]
    graph.initializer.extend(kept)
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(casts + nodes)
    return out


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_bytes(data)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _external(init, offset: int, length: int) -> None:
    """Point an initializer at the shared weights file (its bytes leave the graph)."""
    for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
        init.ClearField(field)
    init.data_location = TensorProto.EXTERNAL
    del init.external_data[:]
    for key, value in (("location", WEIGHTS_LOCATION), ("offset", str(offset)), ("length", str(length))):
        entry = init.external_data.add()
        entry.key, entry.value = key, value


def shared(plain: bytes, attn: bytes) -> tuple[bytes, bytes, bytes, dict]:
    """(plain graph, attention graph, weights file): the plain graph's tensors moved into one file
    (64-byte aligned), and the attention graph's tensors that are the same (type, shape, bytes) read
    from it too. Counts: how many of the attention graph's tensors are shared, how many its own."""
    p, a = onnx.load_from_string(plain), onnx.load_from_string(attn)
    blob, where = bytearray(), {}

    def key(init) -> tuple:
        raw = numpy_helper.to_array(init).tobytes()
        return (init.data_type, tuple(init.dims), hashlib.sha256(raw).hexdigest()), raw

    for init in p.graph.initializer:
        k, raw = key(init)
        if len(raw) < SHARE_MIN_BYTES:
            continue
        if k not in where:
            blob += b"\0" * (-len(blob) % 64)
            where[k] = (len(blob), len(raw))
            blob += raw
        _external(init, *where[k])
    own = same = 0
    for init in a.graph.initializer:
        k, raw = key(init)
        if len(raw) >= SHARE_MIN_BYTES and k in where:
            _external(init, *where[k])
            same += 1
        else:
            own += 1
    return p.SerializeToString(), a.SerializeToString(), bytes(blob), {"shared_tensors": same, "own_tensors": own}


def _copy(web: Path, fam: str, data: bytes, keep: set, ext: str = "onnx") -> dict:
    """web/<fam>.<hash>.<ext> and its .gz: {file, sha256, bytes, gzip_bytes}."""
    digest = hashlib.sha256(data).hexdigest()
    name = f"{fam}.{digest[:16]}.{ext}"
    packed = gzip.compress(data, compresslevel=9, mtime=0)
    if not (web / name).is_file() or hashlib.sha256((web / name).read_bytes()).hexdigest() != digest:
        _write(web / name, data)
    _write(web / (name + ".gz"), packed)
    keep.update({name, name + ".gz"})
    return {"file": name, "sha256": digest, "bytes": len(data), "gzip_bytes": len(packed)}


def _pair(web: Path, fam: str, plain: bytes, attn: bytes, keep: set, dims: dict, storage: str) -> tuple[dict, dict | None]:
    """A family's plain graph and (where the set has one) its attention graph, written as one pair:
    the two read ONE weights file (`shared`). (plain entry, attention entry or None)."""
    if not attn:
        return _copy(web, fam, plain, keep), None
    plain, attn, blob, counts = shared(plain, attn)
    weights = {**_copy(web, fam + "_weights", blob, keep, ext="bin"), "location": WEIGHTS_LOCATION}
    inspection = {**_copy(web, fam + ATTN, attn, keep), "weights": weights, "storage": storage, "config": dims, **counts}
    return {**_copy(web, fam, plain, keep), "weights": weights}, inspection


def _files(entry: dict | None) -> list[dict]:
    """Every file an entry names: its graph, its weights file, and its float16 alternative's."""
    if not isinstance(entry, dict) or not entry:
        return []
    return [entry, *_files(entry.get("weights")), *_files(entry.get("fp16"))]


def write_web_copies(folder: Path, families=None) -> dict | None:
    """Write folder/web/ (hashed copies, their .gz, manifest.json) for the families the set holds;
    the manifest, or None when the set holds none of them. Old copies are removed."""
    folder = Path(folder)
    present = [f for f in (families or web_families())
               if (folder / onnx_file(f)).is_file() and (folder / card_file(f)).is_file()]
    if not present or not (folder / VOCAB_FILE).is_file():
        return None
    chars = json.loads((folder / VOCAB_FILE).read_text(encoding="utf-8"))["chars"]
    web = folder / WEB_DIR
    web.mkdir(exist_ok=True)
    try:
        read = json.loads((web / MANIFEST).read_text(encoding="utf-8"))
        before = read.get("models", {}) if read.get("format") == FORMAT else {}  # another layout: written anew
    except (OSError, ValueError):
        before = {}
    manifest = {"format": FORMAT, "vocab": {"chars": chars}, "models": {}}
    keep = {MANIFEST}
    for fam in present:
        config = json.loads((folder / card_file(fam)).read_text(encoding="utf-8"))["config"]
        fp32 = (folder / onnx_file(fam)).read_bytes()
        attn_path = folder / f"{fam}.attn.onnx"
        attn = attn_path.read_bytes() if attn_path.is_file() else b""
        source = hashlib.sha256(fp32 + json.dumps(chars).encode() + attn).hexdigest()
        old, old_attn = before.get(fam) or {}, before.get(fam + ATTN) or {}
        files = _files(old) + _files(old_attn)
        if (old.get("source_sha256") == source and (old.get("storage") == "fp16" or "fp16" in old) and bool(attn) == bool(old_attn)
                and all((web / str(v.get("file"))).is_file() and (web / f"{v.get('file')}.gz").is_file() for v in files)):
            manifest["models"][fam] = old  # the same graphs and vocabulary: their copies stand
            if old_attn:
                manifest["models"][fam + ATTN] = old_attn
            keep.update(n for v in files for n in (v["file"], v["file"] + ".gz"))
            continue
        half = fp16_graph(onnx.load_from_string(fp32)).SerializeToString()
        half_attn = fp16_graph(onnx.load_from_string(attn)).SerializeToString() if attn else b""
        check = family(fam).web_checker()(fp32, half, config, chars)  # its own fp16 check (training/families/)
        if attn:  # the attention graph reads the same weights file, so it is stored the same way: checked too
            check["attention"] = check_attention(fam, attn, half_attn, chars)
            check["ok"] = check["ok"] and check["attention"]["ok"]
        storage = "fp16" if check["ok"] else "fp32"
        dims = {k: config[k] for k in ("vocab_size", "context", "n_layer", "n_head", "n_embd")}
        entry, inspection = _pair(web, fam, *((half, half_attn) if check["ok"] else (fp32, attn)), keep, dims, storage)
        manifest["models"][fam] = {**entry, "source_sha256": source, "storage": storage, "fp32_bytes": len(fp32),
                                   "config": dims, "fp16_check": check}
        if storage == "fp32":  # the smaller pair a static export may ask for (--weights fp16), also one weights file
            alt, alt_inspection = _pair(web, fam, half, half_attn, keep, dims, "fp16")
            manifest["models"][fam]["fp16"] = alt
            if inspection:
                inspection["fp16"] = {k: v for k, v in alt_inspection.items() if k not in ("config", "storage")}
        if inspection:
            manifest["models"][fam + ATTN] = inspection
    write_json(web / MANIFEST, manifest)
    for old in web.iterdir():
        if old.name not in keep and not old.name.startswith("."):
            old.unlink(missing_ok=True)
    return manifest


def main(folders: list[str]) -> None:
    """python -m training web-copies FOLDER...: every set folder given, and every set below it
    (a run's final/ and snapshots/step-N/), gets its web copies."""
    for top in folders:
        top = Path(top)
        if not top.is_dir():
            raise SystemExit(f"python -m training web-copies: {top} is not a folder")
        sets = [p.parent for p in sorted(top.rglob(VOCAB_FILE)) if WEB_DIR not in p.parts and not any(
            part.startswith(".tmp-") for part in p.parts)]
        for folder in sets:
            manifest = write_web_copies(folder)
            if manifest is None:
                continue
            summary = {f: {k: m[k] for k in ("file", "storage", "bytes", "gzip_bytes")}
                       | ({"fp16_check_ok": m["fp16_check"]["ok"]} if "fp16_check" in m else {"shared_tensors": m.get("shared_tensors")})
                       for f, m in manifest["models"].items()}
            print(json.dumps({"set": str(folder), "models": summary}), flush=True)
