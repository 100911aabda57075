"""Web security of the server: security headers on every response, no CORS, no HTML built from
strings in the applets, no server-side reflection, loopback by default."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import REPO, Settings
from app.main import create_app
from app.security import CSP

PAGES = ["/", "/mask-fill", "/generate", "/nsp", "/attention", "/compare", "/objectives", "/concepts"]
TEMPLATES = sorted((REPO / "templates").glob("*.html"))
SCRIPTS = sorted(p for p in (REPO / "static").rglob("*.js") if "vendor" not in p.parts)
# 'wasm-unsafe-eval': WebAssembly for the browser engine (static/lib/engine.js); never 'unsafe-eval'
REQUIRED_CSP = ["default-src 'self'", "script-src 'self' 'wasm-unsafe-eval'", "style-src 'self'", "object-src 'none'",
                "base-uri 'none'", "frame-ancestors 'self'", "connect-src 'self'", "form-action 'self'"]


def directives(policy: str) -> dict[str, str]:
    return {d.strip().split(" ", 1)[0]: d.strip() for d in policy.split(";") if d.strip()}


def assert_security_headers(response) -> None:
    assert response.headers["x-content-type-options"] == "nosniff", response.request.url
    assert response.headers["referrer-policy"] in ("no-referrer", "same-origin")
    assert "access-control-allow-origin" not in response.headers


@pytest.mark.parametrize("path", PAGES)
def test_every_page_has_a_strict_csp(client, path):
    r = client.get(path)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    policy = directives(r.headers["content-security-policy"])
    for required in REQUIRED_CSP:
        assert policy[required.split(" ")[0]] == required
    assert "'unsafe-inline'" not in r.headers["content-security-policy"]
    assert "'unsafe-eval'" not in r.headers["content-security-policy"]
    assert_security_headers(r)


def test_every_kind_of_response_has_nosniff(client):
    responses = [
        client.get("/api/health"), client.get("/api/models"), client.get("/openapi.json"),
        client.get("/static/lib/api.js"), client.get("/static/style.css"), client.get("/static/favicon.svg"),
        client.post("/api/next-token", json={"prompt": "the"}),
        client.get("/api/generate/stream", params={"prompt": "the", "max_new_tokens": 2}),
        client.get("/nope"), client.get("/static/nope.js"), client.put("/api/next-token"),
        client.post("/api/next-token", json={"prompt": ""}),
        client.post("/api/next-token", content=b"{", headers={"content-type": "application/json"}),
        client.post("/api/next-token", content=b"x" * 70_000, headers={"content-type": "application/json"}),
    ]
    assert [r.status_code for r in responses] == [200] * 8 + [404, 404, 405, 422, 400, 413]
    for r in responses:
        assert_security_headers(r)
        assert r.headers["content-security-policy"] == CSP


def test_busy_and_crash_answers_have_the_headers_too(tiny_models_dir):
    app = create_app(Settings(models_dir=tiny_models_dir, max_concurrent_requests=1))

    @app.get("/boom")
    def boom():
        raise RuntimeError("failed at /secret/path.py")

    with TestClient(app, raise_server_exceptions=False) as c:
        crash = c.get("/boom")
        assert crash.status_code == 500 and "secret" not in crash.text
        assert_security_headers(crash)
        app.state.admission.in_flight = 1  # as if one request were running
        busy = c.post("/api/next-token", json={"prompt": "a"})
        app.state.admission.in_flight = 0
        assert busy.status_code == 503
        assert_security_headers(busy)


def test_no_cors_for_other_origins(client):
    origin = {"Origin": "https://evil.example"}
    for r in (client.get("/api/health", headers=origin),
              client.post("/api/next-token", json={"prompt": "a"}, headers=origin),
              client.options("/api/next-token", headers={**origin, "Access-Control-Request-Method": "POST"})):
        assert not [h for h in r.headers if h.lower().startswith("access-control-")], r.headers


def test_binds_to_loopback_unless_told(monkeypatch):
    monkeypatch.delenv("PLAYGROUND_HOST", raising=False)
    assert Settings().host == "127.0.0.1"


def test_docs_are_served_offline_under_the_csp(client):
    """/docs is Swagger UI from static/vendor (no CDN), started by a script file (no inline script)."""
    r = client.get("/docs")
    assert r.status_code == 200 and r.headers["content-security-policy"] == CSP
    html = r.text
    assert "://" not in html.replace("http://www.w3.org", "")  # nothing from another host
    refs = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert "/static/vendor/swagger-ui/swagger-ui-bundle.js" in refs and "/static/pages/docs.js" in refs
    for ref in refs:
        assert ref.startswith("/static/") or ref == "/openapi.json", ref
        if ref.startswith("/static/"):
            assert client.get(ref).status_code == 200, ref
    assert not re.search(r"<script\b[^>]*>[^<\s]", html) and "<style" not in html
    assert 'data-openapi-url="/openapi.json"' in html
    assert client.get("/redoc").status_code == 404
    assert client.get("/openapi.json").json()["info"]["title"] == "Pretraining Playground"
    license_text = (REPO / "static/vendor/swagger-ui/LICENSE").read_text()
    assert "Apache License" in license_text


@pytest.mark.parametrize("path", PAGES)
def test_pages_do_not_reflect_the_query(client, path):
    payload = '"><img src=x onerror=alert(1)><script>alert(1)</script>{{7*7}}'
    r = client.get(path, params={"text": payload, "prompt": payload, "a": payload})
    assert r.status_code == 200
    assert "onerror" not in r.text and "alert(1)" not in r.text and "49" not in r.text


# ---------------------------------------------------------------- static checks of the applets
# eval counts when called (an event may be named "eval": the training page's validation events are)
SINKS = re.compile(r"\b(innerHTML|outerHTML|insertAdjacentHTML|document\.write(ln)?|eval\s*\(|new\s+Function|"
                   r"setTimeout\s*\(\s*['\"`]|setInterval\s*\(\s*['\"`]|srcdoc|createContextualFragment)")


def strip_js_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"(?m)^\s*//.*$", "", text)


def test_there_are_templates_and_scripts_to_check():
    assert len(TEMPLATES) >= 6 and len(SCRIPTS) >= 6


@pytest.mark.parametrize("path", SCRIPTS + TEMPLATES, ids=lambda p: p.name)
def test_no_html_string_sinks(path: Path):
    text = path.read_text(encoding="utf-8")
    code = strip_js_comments(text) if path.suffix == ".js" else text
    assert not SINKS.search(code), f"{path.name}: {SINKS.search(code).group(0)}"


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name)
def test_templates_have_no_inline_script_style_or_unescaped_output(path: Path):
    text = path.read_text(encoding="utf-8")
    assert "|safe" not in text.replace(" ", "") and "autoescape false" not in text
    assert "Markup(" not in text
    for tag in re.findall(r"<script\b[^>]*>", text):
        assert re.search(r'\bsrc="/static/[\w./-]+\.js"', tag) and ".." not in tag, tag
    assert not re.search(r"<script\b[^>]*>[^<\s]", text), "inline script"
    assert "<style" not in text, "inline style element"
    assert not re.search(r"\sstyle\s*=", text), "style attribute"
    assert not re.search(r"\son[a-z]+\s*=", text), "inline event handler"
    assert "javascript:" not in text.lower()


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_scripts_set_no_inline_handlers_or_style_attributes(path: Path):
    code = strip_js_comments(path.read_text(encoding="utf-8"))
    assert not re.search(r"setAttribute\(\s*['\"](on\w+|style)['\"]", code)
    assert "javascript:" not in code.lower()


@pytest.mark.parametrize("base, sent", [("http://localhost", True), ("http://127.0.0.1:8000", True), ("https://school.example", True),
                                        ("http://192.168.1.20:8000", False), ("http://teacher-laptop.lan", False)])
def test_the_opener_policy_only_where_the_browser_honours_it(tiny_models_dir, tmp_path, base, sent):
    """Issue 44 must 4: on a plain-http LAN address Chromium ignores Cross-Origin-Opener-Policy and logs
    a console error on every page; https and localhost keep it. The other headers stay everywhere."""
    settings = Settings(models_dir=tiny_models_dir, data_dir=tmp_path, allowed_hosts=["*"])
    with TestClient(create_app(settings), base_url=base) as c:
        r = c.get("/generate")
    assert r.status_code == 200
    assert ("cross-origin-opener-policy" in r.headers) is sent
    assert r.headers["content-security-policy"] == CSP and r.headers["cross-origin-resource-policy"] == "same-origin"
