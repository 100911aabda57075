"""`python -m app export-static DIR`: the playground as plain files, for any static web host.

DIR gets the pages at the app's URLs (`/generate` is generate/index.html: a static server answers
/generate with a redirect to /generate/ and serves it), /static/ as the app serves it, /api/models
(what the pages ask first, frozen: the default set only), and /web/ (the engine's WebAssembly and
the set's web copies, at the content-hashed URLs the app serves them under, with .gz copies beside
for servers that send precompressed files, e.g. nginx's gzip_static). No Python runs behind it:
Generation and Mask-Fill compute on each visitor's device (static/lib/engine.js); every other page
says plainly that it needs the server. The pages are rendered by the app itself (in-process), so
they are the app's own HTML plus three things: a marker the scripts read
(<meta name="playground-build" content="static">), the app's Content-Security-Policy as a <meta>
(a static host sends no such header), and that notice.
"""
from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
from pathlib import Path

from .config import Settings
from .routers.device import MANIFEST, WEB_DIR, engine_files, read_manifest
from .security import CSP

PAGES = ["/", "/mask-fill", "/generate", "/nsp", "/attention", "/compare", "/objectives", "/concepts", "/train",
         "/finetune"]
ON_DEVICE = {"/", "/mask-fill", "/generate"}  # work without a server
MARKER = ".playground-static"  # a folder holding this was written here: it may be replaced
# frame-ancestors has no effect in a <meta> policy (browsers warn about it): the rest is the app's own.
META_CSP = "; ".join(d for d in CSP.split("; ") if not d.startswith("frame-ancestors"))
NOTICE = ("This page needs the playground's server, and this copy of the playground has none: it is a "
          "static copy in which only Generation and Mask-Fill work, computed in your browser. To use this "
          "page, open the playground from a computer that runs it (python -m app).")
SERVER_FOOTER = "running on this server. Works offline."
STATIC_FOOTER = "running in your browser (this copy has no server). Works offline once loaded."


def static_page(html: str, path: str) -> str:
    """The app's page with the static marker, its CSP as a <meta> and, where needed, the notice."""
    head = (f'<meta name="playground-build" content="static">\n  '
            f'<meta http-equiv="Content-Security-Policy" content="{META_CSP}">\n  ')
    html = html.replace('<meta charset="utf-8">\n  ', '<meta charset="utf-8">\n  ' + head, 1)
    html = html.replace(SERVER_FOOTER, STATIC_FOOTER)
    if path not in ON_DEVICE:
        note = f'<p class="error-box static-note" role="note">{NOTICE}</p>'
        html = html.replace('<main id="main" tabindex="-1">', '<main id="main" tabindex="-1">\n    ' + note, 1)
    return html


def prepare(out: Path) -> None:
    if out.exists() and any(out.iterdir()) and not (out / MARKER).exists():
        raise SystemExit(f"export-static: {out} is not empty and holds no earlier static build: "
                         "give an empty or new folder")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / MARKER).write_text("written by python -m app export-static\n", encoding="utf-8")


def ensure_web_copies(models_dir: Path) -> dict:
    found = read_manifest(models_dir)
    if found is None:  # written by training (it needs onnx; the app never imports training)
        raise SystemExit(f"export-static: {models_dir} has no web copies yet; run: python -m training web-copies {models_dir}")
    return found


def export(out: Path, models_dir: Path) -> dict:
    from fastapi.testclient import TestClient

    from .main import create_app

    out, models_dir = Path(out), Path(models_dir)
    ensure_web_copies(models_dir)
    prepare(out)
    settings = Settings(models_dir=models_dir, data_dir=Path(tempfile.mkdtemp(prefix="playground-static-")),
                        instructor_token="unused-in-a-static-build")
    try:
        with TestClient(create_app(settings), base_url="http://localhost") as client:
            written = write_all(out, client, settings, models_dir)
    finally:
        shutil.rmtree(settings.data_dir, ignore_errors=True)
    return written


def write_all(out: Path, client, settings: Settings, models_dir: Path) -> dict:
    for path in PAGES:
        r = client.get(path)
        r.raise_for_status()
        target = out / path.strip("/") / "index.html" if path != "/" else out / "index.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(static_page(r.text, path), encoding="utf-8")
    shutil.copytree(settings.static_dir, out / "static", ignore=shutil.ignore_patterns("__pycache__", ".*"))
    models = client.get("/api/models").json()
    default = models["default"]
    models["sets"] = [s for s in models.get("sets", []) if s.get("id") == default]
    models["static_build"] = True
    (out / "api").mkdir()
    (out / "api" / "models").write_text(json.dumps(models, ensure_ascii=False), encoding="utf-8")
    manifest = client.get(f"/web/models/{default}/manifest.json").json()
    sets = out / "web" / "models"
    for name in (default, "default"):
        (sets / name).mkdir(parents=True, exist_ok=True)
        (sets / name / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
    for part in manifest["models"].values():
        source, target = models_dir / WEB_DIR / part["file"], sets / default / part["file"]
        shutil.copyfile(source, target)
        packed = source.with_name(source.name + ".gz")
        if packed.is_file():
            shutil.copyfile(packed, target.with_name(target.name + ".gz"))
        else:  # a checkout without the .gz copies
            target.with_name(target.name + ".gz").write_bytes(gzip.compress(source.read_bytes(), compresslevel=9, mtime=0))
    engine = out / "web" / "engine"
    engine.mkdir(parents=True)
    for f in engine_files(settings.static_dir).values():
        (engine / f.name).write_bytes(f.data)
        (engine / (f.name + ".gz")).write_bytes(f.gz)
    (out / "README.txt").write_text(
        "The Pretraining Playground as static files (python -m app export-static).\n"
        "Serve this folder at the root of any web host: python -m http.server 8080 (then http://localhost:8080/),\n"
        "nginx, a CDN or a school's web space. Generation and Mask-Fill run in each visitor's browser.\n"
        "See docs/static-build.md in the playground's source.\n", encoding="utf-8")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return {"folder": str(out), "set": default, "pages": PAGES, "bytes": size}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m app export-static",
                                     description="Write the playground as static files for any web host.")
    parser.add_argument("folder", help="where to write it (new, empty, or an earlier static build)")
    parser.add_argument("--models-dir", default=None, help="the model set to ship (default: the shipped one)")
    args = parser.parse_args(argv)
    models_dir = Path(args.models_dir) if args.models_dir else Settings().models_dir
    print(json.dumps(export(Path(args.folder), models_dir)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
