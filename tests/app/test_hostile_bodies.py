"""Issue 24: hostile bodies are the client's mistake, never the server's. JSON nested 30,000 deep
on every route that takes a JSON body (the OpenAPI schema lists them) and on POST /login; a lone
surrogate or 50,000-deep JSON inside a fine-tune's task_text: each is a 4xx saying what was wrong,
no traceback in the log, and no folder left behind."""
from __future__ import annotations

import json
import logging
import re

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from tests.conftest import SHIPPED_MODELS

TOKEN = "hostile-teacher-token"
DEEP = "[" * 30_000 + "]" * 30_000


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    application = create_app(Settings(models_dir=SHIPPED_MODELS, data_dir=tmp_path_factory.mktemp("data"),
                                      instructor_token=TOKEN))
    with TestClient(application):
        yield application


def json_routes(app) -> list[tuple[str, str]]:
    out = []
    for path, ops in app.openapi()["paths"].items():
        for method, op in ops.items():
            if "application/json" in (op.get("requestBody") or {}).get("content", {}):
                out.append((method.upper(), re.sub(r"\{[^}]+\}", "KMT4HX", path)))
    return out


def no_tracebacks(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


def test_deep_json_on_every_json_route_and_login_is_a_4xx_without_a_traceback(app, caplog):
    routes = json_routes(app)
    assert len(routes) >= 10 and ("POST", "/api/sessions/KMT4HX/join") in routes
    c = TestClient(app, raise_server_exceptions=False, client=("127.0.0.2", 5000),
                   headers={"Authorization": f"Bearer {TOKEN}", "Sec-Fetch-Site": "same-origin",
                            "Content-Type": "application/json"})
    caplog.set_level(logging.INFO)
    for method, path in routes + [("POST", "/login")]:
        for body in (DEEP, '{"token": ' + DEEP + "}", '{"nickname": "a", "x": ' + DEEP + "}"):
            r = c.request(method, path, content=body)
            assert 400 <= r.status_code < 500, (method, path, r.status_code, r.text[:200])
            assert "body" in r.json()["detail"] or r.json()["parameter"], (method, path, r.text[:200])
    assert not no_tracebacks(caplog)
    r = c.post("/login", content='{"token": ' + DEEP + "}")
    assert r.status_code == 400 and "nested too deeply" in r.json()["detail"]


def test_hostile_task_text_is_a_422_naming_it_and_leaves_no_folder(app, caplog):
    c = TestClient(app, raise_server_exceptions=False, headers={"Authorization": f"Bearer {TOKEN}"})
    good = "\n".join(json.dumps({"text": f"line {k} is good", "label": "ab"[k % 2]}) for k in range(40))
    surrogate = json.dumps({"task_text": good + '\n{"text": "a\\ud800b", "label": "a"}', "model": "shakespeare"})
    surrogate = surrogate.replace("\\\\ud800", "\\ud800")  # a JSON escape of half a character, as a client can send
    deep = json.dumps({"task_text": good + '\n{"text": ' + "[" * 50_000 + "]" * 50_000 + ', "label": "a"}',
                       "model": "shakespeare"})
    caplog.set_level(logging.INFO)
    for body, said in ((surrogate, "lone surrogate"), (deep, "nested too deeply")):
        r = c.post("/api/finetunes", content=body, headers={"Content-Type": "application/json"})
        assert r.status_code == 422 and r.json()["parameter"] == "task_text" and said in r.json()["detail"], r.text
    folder = app.state.settings.data_dir / "finetunes"
    assert not folder.exists() or not any(folder.iterdir())
    assert not [p for p in app.state.settings.data_dir.iterdir() if p.name.startswith(".deleted")]
    assert not no_tracebacks(caplog)
