"""What the browser needs to run the models itself (static/lib/engine.js): each set's web copies
(written beside it by training/export/web.py) and onnxruntime-web's WebAssembly.

GET /web/models/<set>/manifest.json   the set's web manifest ("default" = the default set), with
                                      the URLs of its files and of the engine's; Cache-Control:
                                      no-cache (asked again each visit, cheap: a few KB)
GET /web/models/<set>/<family>.<hash>.onnx and GET /web/engine/<name>.<hash>.<ext>
                                      content-hashed, so `Cache-Control: immutable` (a year): a
                                      browser never asks twice. Sent gzip-compressed when the
                                      browser accepts it, from a copy compressed once (the set's
                                      .gz beside it; the engine's in memory, at its first request),
                                      never per request.
GET /web/models/<set>/<family>.<hash>.onnx.gz and GET /web/engine/<name>.<hash>.wasm.gz
                                      the same gzip copies as plain files (application/gzip, no
                                      Content-Encoding): what the manifest's `packed` URLs name and
                                      the browser unpacks itself (DecompressionStream), as it must on
                                      a static host that sends no compression; immutable too.
The static build (app/static_build.py) writes the same files under the same URLs.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import threading
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse, Response

from .. import deps
from ..errors import ApiError

router = APIRouter(tags=["device"], include_in_schema=False)

WEB_DIR, MANIFEST = "web", "manifest.json"
ENGINE_DIR = Path("vendor") / "onnxruntime-web"
ENGINE_FILES = {"module": "ort-wasm-simd-threaded.js", "wasm": "ort-wasm-simd-threaded.wasm"}
IMMUTABLE = "public, max-age=31536000, immutable"
MODEL_FILE = re.compile(r"^[a-z0-9_]+\.[0-9a-f]{16}\.(onnx|bin)$")  # a graph, or weights graphs share
ENGINE_FILE = re.compile(r"^(?P<stem>[A-Za-z0-9_.-]+)\.(?P<hash>[0-9a-f]{16})\.(?P<ext>js|wasm)$")
TYPES = {"js": "text/javascript; charset=utf-8", "wasm": "application/wasm"}
GZIP_TYPE = "application/gzip"


class EngineFile:
    """One vendored engine file: its bytes, hash and a gzip copy made once, when first asked for
    (level 6: within 0.5 % of level 9's size on the 14 MB WebAssembly, in half its CPU seconds)."""

    def __init__(self, path: Path):
        self.path = path
        self.data = path.read_bytes()
        self.hash = hashlib.sha256(self.data).hexdigest()[:16]
        self._gz: bytes | None = None
        self._lock = threading.Lock()
        stem, ext = path.name.rsplit(".", 1)
        self.name, self.ext = f"{stem}.{self.hash}.{ext}", ext

    @property
    def gz(self) -> bytes:
        with self._lock:
            if self._gz is None:
                self._gz = gzip.compress(self.data, compresslevel=6, mtime=0)
            return self._gz


_engine: dict[str, EngineFile] = {}
_engine_lock = threading.Lock()


def engine_files(static_dir: Path) -> dict[str, EngineFile]:
    """{"module": EngineFile, "wasm": EngineFile}, read and compressed once per process."""
    with _engine_lock:
        if not _engine:
            for role, name in ENGINE_FILES.items():
                _engine[role] = EngineFile(Path(static_dir) / ENGINE_DIR / name)
        return _engine


def pack_engine_soon(static_dir: Path) -> None:
    """Make the engine's gzip copy in a background thread at the lowest CPU priority, once per
    process, so that the first manifest (which states its size) does not wait seconds for it."""
    def pack() -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)  # this thread only (Linux)
        except (AttributeError, OSError):
            pass
        try:
            _ = engine_files(static_dir)["wasm"].gz
        except OSError:
            pass  # served without the engine: its routes answer 404

    threading.Thread(target=pack, name="pack-engine", daemon=True).start()


def engine_info(static_dir: Path) -> dict:
    """The engine's URLs; `wasm_packed` is its gzip copy, the one the browser downloads and unpacks."""
    files = engine_files(static_dir)
    wasm = files["wasm"]
    return {"module": f"/web/engine/{files['module'].name}", "wasm": f"/web/engine/{wasm.name}",
            "wasm_bytes": len(wasm.data), "wasm_packed": f"/web/engine/{wasm.name}.gz", "wasm_packed_bytes": len(wasm.gz)}


def read_manifest(folder: Path) -> dict | None:
    try:
        return json.loads((Path(folder) / WEB_DIR / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def set_manifest(manifest: dict, set_id: str, name: str, engine: dict) -> dict:
    """The manifest as the browser reads it: the set's own plus the URLs of every file (`packed`: its
    gzip copy, `gzip_bytes` long, the one the browser downloads), a shared weights file's too."""
    def at(part: dict) -> dict:
        return {**part, "url": f"/web/models/{set_id}/{part['file']}", "packed": f"/web/models/{set_id}/{part['file']}.gz"}

    models = {fam: {**at(part), **({"weights": at(part["weights"])} if isinstance(part.get("weights"), dict) else {})}
              for fam, part in manifest["models"].items()}
    return {**manifest, "id": set_id, "name": name, "models": models, "engine": engine}


def accepts_gzip(request: Request) -> bool:
    return "gzip" in request.headers.get("accept-encoding", "").lower()


_packing = threading.Lock()


def pack(path: Path, packed: Path) -> bool:
    """Write the missing gzip copy of a web file once (a checkout may leave the .gz files out);
    False where the folder is read-only (the file then goes uncompressed, never compressed per request)."""
    with _packing:
        if packed.is_file():
            return True
        tmp = packed.with_name(f".{packed.name}.tmp")
        try:
            tmp.write_bytes(gzip.compress(path.read_bytes(), compresslevel=9, mtime=0))
            tmp.replace(packed)
            return True
        except OSError:
            tmp.unlink(missing_ok=True)
            return False


@router.get("/web/models/{set_id}/manifest.json")
def manifest(set_id: str, registry: deps.RegistryDep, settings: deps.SettingsDep):
    meta = registry.meta(None if set_id == "default" else set_id)
    found = read_manifest(meta.folder)
    if found is None:
        raise ApiError(f"model set {meta.id!r} has no copies for the browser yet "
                       f"(python -m training web-copies FOLDER writes them)", "model", status=404)
    body = set_manifest(found, meta.id, meta.name, engine_info(settings.static_dir))
    return JSONResponse(body, headers={"Cache-Control": "no-cache"})


@router.get("/web/models/{set_id}/{file}")
def model_file(set_id: str, file: str, request: Request, registry: deps.RegistryDep):
    meta = registry.meta(set_id)
    raw = file.endswith(".gz")  # the gzip copy itself, for the browser to unpack
    name = file[:-3] if raw else file
    path = meta.folder / WEB_DIR / name
    if not MODEL_FILE.match(name) or not path.is_file():
        raise ApiError(f"model set {meta.id!r} has no web file {file!r} (an old link? the manifest names the current ones)",
                       None, status=404)
    packed = path.with_name(name + ".gz")
    if raw:
        if not (packed.is_file() or pack(path, packed)):
            raise ApiError(f"model set {meta.id!r} has no gzip copy of {name!r} and its folder is read-only "
                           f"(python -m training web-copies FOLDER writes them)", None, status=404)
        return FileResponse(packed, media_type=GZIP_TYPE, headers={"Cache-Control": IMMUTABLE})
    headers = {"Cache-Control": IMMUTABLE, "Vary": "Accept-Encoding"}
    if accepts_gzip(request) and (packed.is_file() or pack(path, packed)):
        headers["Content-Encoding"] = "gzip"
        return FileResponse(packed, media_type="application/octet-stream", headers=headers)
    return FileResponse(path, media_type="application/octet-stream", headers=headers)


@router.get("/web/engine/{file}")
def engine_file(file: str, request: Request, settings: deps.SettingsDep):
    raw = file.endswith(".wasm.gz")  # the gzip copy itself, for the browser to unpack
    name = file[:-3] if raw else file
    match = ENGINE_FILE.match(name)
    files = engine_files(settings.static_dir)
    found = next((f for f in files.values() if match and f.name == name), None)
    if found is None:
        raise ApiError(f"no engine file {file!r} here (an old link? the manifest names the current ones)", None, status=404)
    if raw:
        return Response(found.gz, media_type=GZIP_TYPE, headers={"Cache-Control": IMMUTABLE})
    headers = {"Cache-Control": IMMUTABLE, "Vary": "Accept-Encoding"}
    if accepts_gzip(request):
        headers["Content-Encoding"] = "gzip"
        return Response(found.gz, media_type=TYPES[found.ext], headers=headers)
    return Response(found.data, media_type=TYPES[found.ext], headers=headers)
