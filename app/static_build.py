"""`python -m app export-static DIR`: the playground as plain files, for any static web host.

DIR gets the pages at the app's URLs (`/generate` is generate/index.html: a static server answers
/generate with a redirect to /generate/ and serves it), the static files those pages use, /api/models
(what the pages ask first, frozen: the default set only), and /web/ (the gzip copies of the engine's
WebAssembly and of the set's web copies, which each browser unpacks itself: most hosts send files as
they are, without compression). No Python runs behind it: Generation, Mask-Fill and GPT vs BERT compute on each
visitor's device (static/lib/engine.js); every page that needs the server is a short page saying what
it needs (app/static_notes.py). Every URL in it is relative (pages: ../static/...; scripts: the site's
root computed from their own URL, static/lib/site.js), so the folder works at a host's root and under
any path (https://school.example/playground/). The pages are rendered by the app itself (in-process):
the app's own HTML plus a marker the scripts read (<meta name="playground-build" content="static">) and
the app's Content-Security-Policy as a <meta> (a static host sends no such header).
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

from .config import Settings
from .contract.families import SPECS, for_page
from .pages import PAGES as PAGE_TABLE
from .routers.device import MANIFEST, WEB_DIR, engine_files, read_manifest
from .security import CSP
from .static_notes import NEEDS, SELF_HOSTING, SELF_HOSTING_TITLE, SELF_HOSTING_BODY, WITHOUT_GRAPHS, needs_server_body

ON_DEVICE = [p.path for p in PAGE_TABLE if p.on_device]  # work without a server (app/pages.py)
PAGES = ON_DEVICE + list(NEEDS) + [SELF_HOSTING]
MARKER = ".playground-static"  # a folder holding this was written here: it may be replaced
# frame-ancestors has no effect in a <meta> policy (browsers warn about it): the rest is the app's own.
META_CSP = "; ".join(d for d in CSP.split("; ") if not d.startswith("frame-ancestors"))
SERVER_FOOTER = "running on this server. Works offline."
STATIC_FOOTER = "running in your browser (this copy has no server). Works offline once loaded."
SERVER_LEAD = "running live on\n  this server."
STATIC_LEAD = "running live in\n  your browser."
ROOT_LINK = re.compile(r'(?P<attr>\b(?:href|src))="/(?!/)(?P<path>[^"?#]*)(?P<rest>[^"]*)"')
FILES = ("static/", "api/", "web/")  # root links to files; any other is a page (a folder with index.html)
MAIN = re.compile(r'(<main id="main" tabindex="-1">).*?(</main>)', re.S)
PAGE_SCRIPTS = re.compile(r'\s*<script type="module" src="/static/pages/[^"]+"></script>')
# what a static file may name: ES imports, new URL(x, import.meta.url), CSS url()/@import
REFERENCES = re.compile(r'(?:\bfrom\s*|\bimport\s*\(?\s*|new URL\(\s*)["\']([^"\']+)["\']|url\(\s*["\']?([^"\')]+)')


def relative(html: str, page: str) -> str:
    """Every root link ("/static/x", "/generate?x") relative to where `page` is written."""
    up = "./" if page == "/" else "../" * page.strip("/").count("/") + "../"

    def one(m: re.Match) -> str:
        path = m["path"]
        if path and not path.startswith(FILES) and not path.endswith("/"):
            path += "/"
        return f'{m["attr"]}="{up}{path}{m["rest"]}"'

    return ROOT_LINK.sub(one, html)


def static_page(html: str, path: str) -> str:
    """The app's page with the static marker, its CSP as a <meta>, and links relative to it."""
    head = (f'<meta name="playground-build" content="static">\n  '
            f'<meta http-equiv="Content-Security-Policy" content="{META_CSP}">\n  ')
    html = html.replace('<meta charset="utf-8">\n  ', '<meta charset="utf-8">\n  ' + head, 1)
    html = html.replace(SERVER_FOOTER, STATIC_FOOTER).replace(SERVER_LEAD, STATIC_LEAD)
    return relative(html, path)


def short_page(home: str, path: str, title: str, body: str) -> str:
    """The home page's frame (header, nav, footer) around a short text, with none of home's scripts."""
    html = re.sub(r"<title>.*?</title>", f"<title>{title} · Pretraining Playground</title>", home, count=1, flags=re.S)
    html = PAGE_SCRIPTS.sub("", html, count=1)
    html = html.replace('aria-current="page"', "").replace('data-page="home"', f'data-page="{path.strip("/")}"', 1)
    html = html.replace(f'<a href="{path}" >', f'<a href="{path}" aria-current="page">', 1)
    box = '<p id="error-box" class="error-box" role="alert" aria-live="assertive"></p>'
    return MAIN.sub(lambda m: f'{m[1]}\n    <h1>{title}</h1>\n    {box}{body}  {m[2]}', html, count=1)


def used_static(out: Path, static_dir: Path) -> set[Path]:
    """The files of static_dir the written pages use, following imports from file to file."""
    in_out = (out / "static").resolve()
    todo, seen = sorted(out.rglob("index.html")), set()
    while todo:
        file = todo.pop()
        text = file.read_text(encoding="utf-8", errors="replace")
        names = re.findall(r'(?:href|src)="([^"]+)"', text) if file.suffix == ".html" else \
            [a or b for a, b in REFERENCES.findall(text)]
        for name in names:
            if re.match(r"^[a-z]+:|^#", name):
                continue
            target = (file.parent / re.split(r"[?#]", name)[0]).resolve()
            if target.is_relative_to(in_out):  # a page's link into out/static/: that file of static_dir
                target = static_dir / target.relative_to(in_out)
            if target.is_relative_to(static_dir) and target.is_file() and target not in seen:
                seen.add(target)
                if target.suffix in (".js", ".css"):
                    todo.append(target)
    return seen


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


def export(out: Path, models_dir: Path, weights: str = "fp32") -> dict:
    from fastapi.testclient import TestClient

    from .main import create_app

    out, models_dir = Path(out), Path(models_dir)
    ensure_web_copies(models_dir)
    prepare(out)
    settings = Settings(models_dir=models_dir, data_dir=Path(tempfile.mkdtemp(prefix="playground-static-")),
                        instructor_token="unused-in-a-static-build")
    try:
        with TestClient(create_app(settings), base_url="http://localhost") as client:
            written = write_all(out, client, settings, models_dir, weights)
    finally:
        shutil.rmtree(settings.data_dir, ignore_errors=True)
    return written


PROBE = "To be, or not to be, that is the question:"  # the export's check of the inspection graphs


def write_all(out: Path, client, settings: Settings, models_dir: Path, weights: str = "fp32") -> dict:
    home = client.get("/")
    home.raise_for_status()
    short = dict(NEEDS)
    if client.post("/api/attention", json={"text": PROBE, "pad": 0}).status_code != 200:
        short.update(WITHOUT_GRAPHS)  # no inspection graphs the server answers with: none shipped (checked_attention)
    for path in PAGES:
        if path in short:
            html = short_page(home.text, path, *needs_server_body(path, short))
        elif path == SELF_HOSTING:
            html = short_page(home.text, path, SELF_HOSTING_TITLE, SELF_HOSTING_BODY)
        else:
            r = client.get(path)
            r.raise_for_status()
            html = r.text
        target = out / path.strip("/") / "index.html" if path != "/" else out / "index.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(static_page(html, path), encoding="utf-8")
    static_dir = Path(settings.static_dir).resolve()
    for source in sorted(used_static(out, static_dir)):  # only what the pages use: no Swagger UI, no second wasm
        target = out / "static" / source.relative_to(static_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    models = client.get("/api/models").json()
    default = models["default"]
    models["sets"] = [s for s in models.get("sets", []) if s.get("id") == default]
    models["static_build"] = True
    (out / "api").mkdir()
    (out / "api" / "models").write_text(json.dumps(models, ensure_ascii=False), encoding="utf-8")
    write_web(out, client, settings, models_dir, default, weights)
    (out / "README.txt").write_text(
        "The Pretraining Playground as static files (python -m app export-static).\n"
        "Serve this folder from any web host, at its root or under any path: python -m http.server 8080\n"
        "(then http://localhost:8080/), nginx, GitHub Pages, a school's web space. Generation, Mask-Fill and\n"
        "GPT vs BERT run in each visitor's browser. See docs/static-build.md in the playground's source.\n", encoding="utf-8")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return {"folder": str(out), "set": default, "pages": PAGES, "bytes": size}


# Models only the static copy reads, beside the web copies (training/export/web.py: GPT, BERT, T5 and
# PLM, each family's served and attention graphs reading one weights file): manifest key -> (its file in
# the set, the card whose config it runs with). A family without a web copy (ELECTRA's discriminator)
# and an inspection graph the web copies lack (a set written before them), float32 as served; never
# a second copy of a family the web copies hold (tests/app/test_static_weights_once.py).
ATTN = "_attn"
DEVICE_EXTRAS = {**{s.name: (f"{s.name}.onnx", f"{s.name}.card.json") for s in SPECS.values()},
                 **{s.name + ATTN: (f"{s.name}.attn.onnx", f"{s.name}.card.json") for s in for_page("attention")}}


def extra_copy(models_dir: Path, folder: Path, key: str) -> dict | None:
    """The set's `key` model (DEVICE_EXTRAS) as a web copy (float32, gzip, named by its hash) written
    into `folder`, and its manifest entry; None when the set has none."""
    file, card_name = DEVICE_EXTRAS[key]
    source, card = models_dir / file, models_dir / card_name
    if not (source.is_file() and card.is_file()):
        return None
    data = source.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    name = f"{key}.{digest[:16]}.onnx"
    packed = gzip.compress(data, compresslevel=9, mtime=0)
    (folder / (name + ".gz")).write_bytes(packed)
    config = json.loads(card.read_text(encoding="utf-8"))["config"]
    return {"file": name, "sha256": digest, "bytes": len(data), "gzip_bytes": len(packed), "storage": "fp32",
            "config": {k: config[k] for k in ("vocab_size", "context", "n_layer", "n_head", "n_embd")}}


def checked_attention(client, models: dict, folder: Path) -> None:
    """The server's own check of the inspection graphs, once, on PROBE: each graph's logits against the
    served graph's (what POST /api/attention measures on every request; the device does not download
    the served graphs to measure it again) go into its manifest entry. Graphs the server refuses (a
    stale or foreign export) are not shipped: the copy's attention page then says it needs the server."""
    keys = [s.name + ATTN for s in for_page("attention")]
    needed = {s.name + ATTN for s in for_page("attention") if not s.optional}  # T5's and PLM's are extras
    r = client.post("/api/attention", json={"text": PROBE, "pad": 0}) if needed <= models.keys() else None
    answered = r.json() if r is not None and r.status_code == 200 else {}
    for key in keys:
        if key not in models:
            continue
        maps = answered.get(key.removesuffix(ATTN))
        if maps is None:
            (folder / (models.pop(key)["file"] + ".gz")).unlink(missing_ok=True)  # nothing dead in the copy
        else:
            models[key]["served_logits_max_abs_diff"] = maps["served_logits_max_abs_diff"]


def half_weights(part: dict) -> dict:
    """A web copy's entry with its float16 copy in place of the float32 one (--weights fp16), saying
    so: `storage` fp16, and the check's figures (how often the server's answers came out the same) stay.
    A family's attention graph turns with it: the float16 pair reads its own one weights file."""
    half = part.pop("fp16", None)
    if not isinstance(half, dict):
        return part  # already float16 (its check passed: the same answers), or none written
    part.pop("url", None)
    part.pop("weights", None)  # the float16 pair's weights file (if any) replaces the float32 one
    return {**part, **half, "storage": "fp16"}


def write_web(out: Path, client, settings: Settings, models_dir: Path, default: str, weights: str = "fp32") -> None:
    """web/: the gzip copies only (the browser unpacks them), named in a manifest by relative URLs
    (from web/models/<set>/, so "default" and the set's own id read the same files). weights "fp16":
    the models' float16 copies (half the bytes; seeded texts may differ from the server's in rare
    steps, as their check measured: training/export/web.py)."""
    manifest = client.get(f"/web/models/{default}/manifest.json").json()
    if weights == "fp16":
        manifest["models"] = {fam: half_weights(part) for fam, part in manifest["models"].items()}
        for key, part in manifest["models"].items():  # an attention graph in half precision says what that moved
            check = (manifest["models"].get(key.removesuffix(ATTN)) or {}).get("fp16_check") or {}
            if key.endswith(ATTN) and part.get("storage") == "fp16" and isinstance(check.get("attention"), dict):
                part["fp16_check"] = check["attention"]
    else:
        for part in manifest["models"].values():
            part.pop("fp16", None)  # not shipped: the copy names only what it holds
    sets = out / "web" / "models"
    (sets / default).mkdir(parents=True)
    for part in manifest["models"].values():
        for piece in [part] + ([part["weights"]] if isinstance(part.get("weights"), dict) else []):
            source = models_dir / WEB_DIR / piece["file"]  # a graph, or the weights file two graphs share
            packed = source.with_name(source.name + ".gz")
            target = sets / default / (piece["file"] + ".gz")
            if target.is_file():
                pass  # a shared weights file: written once
            elif packed.is_file():
                shutil.copyfile(packed, target)
            else:  # a checkout without the .gz copies
                target.write_bytes(gzip.compress(source.read_bytes(), compresslevel=9, mtime=0))
            piece.pop("url", None)
            piece["packed"] = f"../{default}/{target.name}"
            piece["gzip_bytes"] = target.stat().st_size
    for key in DEVICE_EXTRAS:  # Objectives' ELECTRA strip and the attention page run on the device too
        if key in manifest["models"]:
            continue  # a web copy already
        extra = extra_copy(models_dir, sets / default, key)
        if extra:
            manifest["models"][key] = {**extra, "packed": f"../{default}/{extra['file']}.gz"}
    checked_attention(client, manifest["models"], sets / default)
    quiz = models_dir / "nsp_quiz.json"
    if quiz.is_file():  # the NSP quiz's bank (the static copy asks BERT's NSP head on the device)
        shutil.copyfile(quiz, sets / default / "nsp_quiz.json")
        manifest["quiz"] = f"../{default}/nsp_quiz.json"
    engine = out / "web" / "engine"
    engine.mkdir(parents=True)
    files = engine_files(settings.static_dir)
    (engine / files["module"].name).write_bytes(files["module"].data)
    (engine / (files["wasm"].name + ".gz")).write_bytes(files["wasm"].gz)
    manifest["engine"] = {"module": f"../../engine/{files['module'].name}", "wasm_packed": f"../../engine/{files['wasm'].name}.gz",
                          "wasm_bytes": len(files["wasm"].data), "wasm_packed_bytes": len(files["wasm"].gz)}
    for name in (default, "default"):
        (sets / name).mkdir(parents=True, exist_ok=True)
        (sets / name / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m app export-static",
                                     description="Write the playground as static files for any web host.")
    parser.add_argument("folder", help="where to write it (new, empty, or an earlier static build)")
    parser.add_argument("--models-dir", default=None, help="the model set to ship (default: the shipped one)")
    parser.add_argument("--weights", choices=("fp32", "fp16"), default="fp32", help=(
        "fp32 (default): the same answers as the server; fp16: the models' half-precision copies, half the "
        "download, where seeded texts may differ from the server's in rare steps (the page says how often)"))
    args = parser.parse_args(argv)
    models_dir = Path(args.models_dir) if args.models_dir else Settings().models_dir
    print(json.dumps(export(Path(args.folder), models_dir, args.weights)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
