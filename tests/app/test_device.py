"""The browser engine's files as the server serves them (app/routers/device.py), and the static build
(python -m app export-static, app/static_build.py)."""
from __future__ import annotations

import gzip
import hashlib
import json
import re
import shutil

import pytest
from fastapi.testclient import TestClient

from app.config import REPO, Settings
from app.main import create_app
from app.security import CSP
from app.static_build import DEVICE_EXTRAS, NEEDS, ON_DEVICE, PAGES, export

IMMUTABLE = "public, max-age=31536000, immutable"


@pytest.fixture
def client(tiny_models_dir, tmp_path):
    settings = Settings(models_dir=tiny_models_dir, data_dir=tmp_path / "data", instructor_token="t" * 32)
    with TestClient(create_app(settings), base_url="http://localhost") as c:
        yield c


def test_manifest_names_hashed_files(client, tiny_models_dir):
    r = client.get("/web/models/default/manifest.json")
    assert r.status_code == 200 and r.headers["cache-control"] == "no-cache"
    m = r.json()
    own = json.loads((tiny_models_dir / "web" / "manifest.json").read_text())
    assert m["id"] == client.get("/api/models").json()["default"] and m["vocab"] == own["vocab"]
    assert client.get(f"/web/models/{m['id']}/manifest.json").json() == m
    for fam, part in m["models"].items():
        assert part["url"] == f"/web/models/{m['id']}/{own['models'][fam]['file']}"
    assert m["engine"]["wasm"].startswith("/web/engine/ort-wasm-simd-threaded.") and m["engine"]["wasm"].endswith(".wasm")
    assert m["engine"]["module"].endswith(".js")


def test_model_files_are_immutable_and_precompressed(client, tiny_models_dir):
    m = client.get("/web/models/default/manifest.json").json()
    part = m["models"]["gpt"]
    plain = (tiny_models_dir / "web" / part["file"]).read_bytes()
    r = client.get(part["url"])  # the test client accepts gzip and decodes it
    assert r.status_code == 200 and r.content == plain
    assert r.headers["content-encoding"] == "gzip" and r.headers["cache-control"] == IMMUTABLE
    assert int(r.headers["content-length"]) == part["gzip_bytes"] and "accept-encoding" in r.headers["vary"].lower()
    r = client.get(part["url"], headers={"accept-encoding": "identity"})
    assert r.content == plain and "content-encoding" not in r.headers
    assert hashlib.sha256(plain).hexdigest().startswith(part["url"].rsplit(".", 2)[-2])


def test_the_gzip_copies_are_served_as_files_for_the_browser_to_unpack(client, tiny_models_dir):
    m = client.get("/web/models/default/manifest.json").json()
    part = m["models"]["gpt"]
    assert part["packed"] == part["url"] + ".gz"
    r = client.get(part["packed"])
    assert r.status_code == 200 and r.headers["content-type"] == "application/gzip" and "content-encoding" not in r.headers
    assert r.headers["cache-control"] == IMMUTABLE and len(r.content) == part["gzip_bytes"]
    assert gzip.decompress(r.content) == (tiny_models_dir / "web" / part["file"]).read_bytes()
    r = client.get(m["engine"]["wasm_packed"])
    wasm = (REPO / "static" / "vendor" / "onnxruntime-web" / "ort-wasm-simd-threaded.wasm").read_bytes()
    assert r.headers["content-type"] == "application/gzip" and len(r.content) == m["engine"]["wasm_packed_bytes"]
    assert gzip.decompress(r.content) == wasm and m["engine"]["wasm_packed_bytes"] < len(wasm) / 3
    assert client.get("/web/models/default/gpt.0123456789abcdef.onnx.gz").status_code == 404


def test_phones_download_models_only_when_the_teacher_says(client, tiny_models_dir, tmp_path):
    assert client.get("/api/models").json()["models_on_phones"] is False
    settings = Settings(models_dir=tiny_models_dir, data_dir=tmp_path / "d2", instructor_token="t" * 32, models_on_phones=True)
    with TestClient(create_app(settings), base_url="http://localhost") as c:
        assert c.get("/api/models").json()["models_on_phones"] is True


def test_engine_files_are_immutable_and_compressed_once(client):
    m = client.get("/web/models/default/manifest.json").json()
    wasm = (REPO / "static" / "vendor" / "onnxruntime-web" / "ort-wasm-simd-threaded.wasm").read_bytes()
    r = client.get(m["engine"]["wasm"])
    assert r.status_code == 200 and r.content == wasm and r.headers["content-type"] == "application/wasm"
    assert r.headers["cache-control"] == IMMUTABLE and int(r.headers["content-length"]) < len(wasm) / 3
    r = client.get(m["engine"]["module"])
    assert r.headers["content-type"].startswith("text/javascript") and r.headers["content-security-policy"] == CSP


def test_a_missing_gzip_copy_is_made_once(tiny_models_dir, tmp_path):
    import shutil

    folder = tmp_path / "set"
    shutil.copytree(tiny_models_dir, folder)
    for gz in (folder / "web").glob("*.gz"):
        gz.unlink()
    settings = Settings(models_dir=folder, data_dir=tmp_path / "data", instructor_token="t" * 32)
    with TestClient(create_app(settings), base_url="http://localhost") as c:
        url = c.get("/web/models/default/manifest.json").json()["models"]["bert"]["url"]
        r = c.get(url)
        assert r.headers["content-encoding"] == "gzip" and r.content == (folder / "web" / url.rsplit("/", 1)[1]).read_bytes()
    assert len(list((folder / "web").glob("*.gz"))) == 1


def test_unknown_files_and_sets_are_404_naming_what(client):
    r = client.get("/web/models/nope/manifest.json")
    assert r.status_code == 404 and r.json()["parameter"] == "model"
    assert client.get("/web/models/default/gpt.0123456789abcdef.onnx").status_code == 404
    assert client.get("/web/models/default/..%2Fgpt.onnx").status_code == 404
    assert client.get("/web/models/default/vocab.json").status_code == 404
    r = client.get("/web/engine/ort-wasm-simd-threaded.0123456789abcdef.wasm")
    assert r.status_code == 404 and "manifest" in r.json()["detail"]


def test_a_set_without_web_copies_says_how_to_make_them(tiny_models_dir, tmp_path):
    import shutil

    folder = tmp_path / "set"
    shutil.copytree(tiny_models_dir, folder, ignore=shutil.ignore_patterns("web"))
    settings = Settings(models_dir=folder, data_dir=tmp_path / "data", instructor_token="t" * 32)
    with TestClient(create_app(settings), base_url="http://localhost") as c:
        r = c.get("/web/models/default/manifest.json")
    assert r.status_code == 404 and "web-copies" in r.json()["detail"]


def test_csp_allows_webassembly_and_never_eval(client):
    policy = client.get("/generate").headers["content-security-policy"]
    script = next(d for d in policy.split("; ") if d.startswith("script-src"))
    assert script == "script-src 'self' 'wasm-unsafe-eval'" and "'unsafe-eval'" not in policy


def test_export_static_writes_the_pages_engine_and_models(tiny_models_dir, tmp_path):
    out = tmp_path / "site"
    summary = export(out, tiny_models_dir)
    assert summary["pages"] == PAGES
    for path in PAGES:
        html = (out / (path.strip("/") + "/index.html" if path != "/" else "index.html")).read_text()
        assert '<meta name="playground-build" content="static">' in html
        assert "script-src 'self' 'wasm-unsafe-eval'" in html and "'unsafe-eval'" not in html
        assert ("needs the playground's server" in html) == (path in NEEDS)
        assert not re.search(r'(?:href|src)="/', html), path  # every link relative: any path prefix works
        assert "this server" not in html, path
    assert (out / "static" / "lib" / "engine.js").read_bytes() == (REPO / "static" / "lib" / "engine.js").read_bytes()
    # nothing dead: no Swagger UI (no /docs), no second WebAssembly, no plain copy beside a .gz
    assert not (out / "static" / "vendor" / "swagger-ui").exists()
    assert not list((out / "static").rglob("*.wasm")) and not (out / "static" / "pages" / "train.js").exists()
    models = json.loads((out / "api" / "models").read_text())
    assert models["static_build"] and [s["id"] for s in models["sets"]] == [models["default"]]
    manifest = json.loads((out / "web" / "models" / "default" / "manifest.json").read_text())
    assert manifest == json.loads((out / "web" / "models" / models["default"] / "manifest.json").read_text())
    here = out / "web" / "models" / "default"
    wasm = (REPO / "static" / "vendor" / "onnxruntime-web" / "ort-wasm-simd-threaded.wasm").read_bytes()
    assert gzip.decompress((here / manifest["engine"]["wasm_packed"]).read_bytes()) == wasm
    assert (here / manifest["engine"]["module"]).is_file()
    for fam, part in manifest["models"].items():
        packed = (here / part["packed"]).resolve()
        assert "url" not in part and packed.stat().st_size == part["gzip_bytes"]
        web = tiny_models_dir / "web" / part["file"]
        source = web if web.is_file() else tiny_models_dir / DEVICE_EXTRAS[fam][0]
        assert gzip.decompress(packed.read_bytes()) == source.read_bytes()
    for fam in ("gpt_attn", "bert_attn"):  # the attention page's inspection graphs, with the export's logits check
        assert 0 <= manifest["models"][fam]["served_logits_max_abs_diff"] <= 1e-3  # the server measured it
    assert not [p for p in (out / "web").rglob("*.onnx")]
    # a second export replaces the first; a folder holding something else is refused
    export(out, tiny_models_dir)
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(SystemExit):
        export(other, tiny_models_dir)
    assert (other / "keep.txt").read_text() == "mine"


def test_a_first_visit_to_generation_fits_12_mb_on_a_host_without_compression(tmp_path):
    """The shipped set's static copy: everything but the other models (BERT, ELECTRA, T5, PLM, the attention graphs), the NSP bank and the other pages
    (an upper bound of what Generation fetches: its page, every script and style, the frozen API, the
    manifest, the engine's and GPT's gzip copies) stays within 12 MB, as the files are on disk."""
    from tests.app.test_engine_node import shipped_web_set

    out = tmp_path / "site"
    export(out, shipped_web_set(tmp_path))
    manifest = json.loads((out / "web" / "models" / "default" / "manifest.json").read_text())
    here = out / "web" / "models" / "default"
    files = lambda part: [part] + ([part["weights"]] if "weights" in part else [])  # noqa: E731 (a graph, its weights file)
    needed = {(here / f["packed"]).resolve() for f in files(manifest["models"]["gpt"])}
    not_for_generation = {(here / f["packed"]).resolve() for part in manifest["models"].values() for f in files(part)} - needed
    not_for_generation.add((here / manifest["quiz"]).resolve())
    not_for_generation |= {p.resolve() for p in out.rglob("index.html") if p.parent.name != "generate"}
    fetched = sum(p.stat().st_size for p in out.rglob("*") if p.is_file() and p.resolve() not in not_for_generation)
    gpt = sum(f["gzip_bytes"] for f in files(manifest["models"]["gpt"])) + manifest["engine"]["wasm_packed_bytes"]
    assert gpt < fetched <= 12_000_000, fetched


def test_an_fp16_export_ships_the_half_precision_copies_and_says_how_often_they_agree(tmp_path):
    """Issue 44 must 3: `export-static --weights fp16` ships GPT's and BERT's float16 copies (half the
    bytes; issue 54: their attention graphs' too, one float16 weights file a family) with the check's figures (how often the server's answers came out the same, which the page
    says beside every answer from the device); fp32, the default, ships the float32 ones."""
    from tests.app.test_engine_node import shipped_web_set

    folder = shipped_web_set(tmp_path)
    full, half = tmp_path / "fp32", tmp_path / "fp16"
    export(full, folder)
    export(half, folder, weights="fp16")
    read = lambda out: json.loads((out / "web" / "models" / "default" / "manifest.json").read_text())  # noqa: E731
    a, b = read(full), read(half)
    for fam in ("gpt", "bert"):
        assert "fp16" not in a["models"][fam] and "fp16" not in b["models"][fam]
        assert b["models"][fam]["storage"] == "fp16" and b["models"][fam]["fp16_check"] == a["models"][fam]["fp16_check"]
        total = lambda part: part["gzip_bytes"] + part.get("weights", {}).get("gzip_bytes", 0)  # noqa: E731 (its graph and weights)
        assert total(b["models"][fam]) <= 0.6 * total(a["models"][fam])
        here = half / "web" / "models" / "default"
        onnx_bytes = gzip.decompress((here / b["models"][fam]["packed"]).read_bytes())
        assert hashlib.sha256(onnx_bytes).hexdigest() == b["models"][fam]["sha256"]
        # its attention graph turns with it (issue 54): the pair reads one float16 weights file, saying what moved
        attn = b["models"][fam + "_attn"]
        assert attn["storage"] == "fp16" and attn["weights"] == b["models"][fam]["weights"] != a["models"][fam]["weights"]
        assert attn["fp16_check"] == a["models"][fam]["fp16_check"]["attention"]
    if a["models"]["gpt"]["storage"] == "fp32":  # the shipped GPT: its float16 copy failed the exact check
        check = b["models"]["gpt"]["fp16_check"]
        assert check["same_texts"] < check["texts"]  # so the page has a rate to say


def test_the_copy_ships_no_attention_graph_the_server_does_not_answer_with(tiny_models_dir, tmp_path):
    """A set with GPT's inspection graph but not BERT's: the server refuses /api/attention (409 naming
    `model`), so the export ships neither graph (no dead .gz) and /attention stays the short page."""
    folder = tmp_path / "set"
    shutil.copytree(tiny_models_dir, folder)
    (folder / "bert.attn.onnx").unlink()
    out = tmp_path / "site"
    export(out, folder)
    manifest = json.loads((out / "web" / "models" / "default" / "manifest.json").read_text())
    assert "gpt_attn" not in manifest["models"] and "bert_attn" not in manifest["models"]
    assert not list((out / "web").rglob("*_attn.*"))
    assert {"gpt", "bert"} <= manifest["models"].keys()
    assert "needs the playground's server" in (out / "attention" / "index.html").read_text()
