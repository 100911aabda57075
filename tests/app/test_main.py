"""app/main.py: error bodies, OpenAPI documentation, thread pool setting."""
from __future__ import annotations

from anyio import to_thread
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app


def test_malformed_json_is_400_with_the_error_body(client):
    r = client.post("/api/next-token", content=b'{"prompt": "a",', headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert r.json() == {"detail": "the request body is not valid JSON", "parameter": None}


def test_body_that_is_not_an_object_is_422(client):
    for raw in (b'["a"]', b'"a"', b"3"):
        r = client.post("/api/next-token", content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 422 and r.json()["parameter"] is None and r.json()["detail"]
    # no Content-Type: not parsed as JSON (FastAPI's CSRF protection), still a clear 422
    assert client.post("/api/next-token", content=b'{"prompt": "a"}').status_code == 422


def test_unknown_route_and_wrong_method_use_the_error_body(client):
    r = client.get("/api/nope")
    assert r.status_code == 404 and r.json() == {"detail": "Not Found", "parameter": None}
    r = client.get("/api/next-token")
    assert r.status_code == 405 and r.json()["parameter"] is None


def test_a_crash_is_a_plain_500_without_traceback_or_path(tiny_models_dir):
    app = create_app(Settings(models_dir=tiny_models_dir))

    @app.get("/boom")
    def boom():
        raise RuntimeError(f"failed reading {tiny_models_dir}/secret.onnx")

    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/boom")
        assert r.status_code == 500
        assert r.json() == {"detail": "internal server error", "parameter": None}
        assert c.get("/api/health").status_code == 200  # still serving


def test_openapi_documents_rules_and_error_statuses(client):
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    for path in ["/api/mask-fill", "/api/mask-fill/corrupt", "/api/next-token", "/api/generate",
                 "/api/generate/stream", "/api/nsp/predict"]:
        assert {"400", "413", "422"} <= set(paths[path]["post"]["responses"]), path
    assert "404" in paths["/api/nsp/quiz/{item_id}/answer"]["post"]["responses"]
    assert "text/event-stream" in paths["/api/generate/stream"]["get"]["responses"]["200"]["content"]
    props = spec["components"]["schemas"]["NextTokenRequest"]["properties"]
    assert "greedy" in props["temperature"]["description"] and props["temperature"]["maximum"] == 5
    assert "smallest set" in props["top_p"]["description"]
    assert "before top-p" in paths["/api/next-token"]["post"]["description"]


def test_thread_pool_setting_sizes_the_limiter(tiny_models_dir):
    limiter_tokens = []
    app = create_app(Settings(models_dir=tiny_models_dir, thread_pool=7))

    @app.get("/tokens")
    async def tokens():
        limiter_tokens.append(to_thread.current_default_thread_limiter().total_tokens)
        return {}

    with TestClient(app) as c:
        c.get("/tokens")
    assert limiter_tokens == [7]


def test_json_and_pages_are_gzipped_but_event_streams_are_not(client):
    gz = {"accept-encoding": "gzip"}
    r = client.post("/api/next-token", json={"prompt": "the king"}, headers=gz)
    assert r.status_code == 200 and r.headers["content-encoding"] == "gzip" and r.json()["chars"]
    assert client.get("/generate", headers=gz).headers["content-encoding"] == "gzip"
    r = client.get("/api/generate/stream", params={"prompt": "the king", "max_new_tokens": 200}, headers=gz)
    assert r.headers["content-type"].startswith("text/event-stream") and "content-encoding" not in r.headers
    small = client.get("/api/health", headers=gz)  # under the minimum size: not worth compressing
    assert "content-encoding" not in small.headers
