"""app/routers/attention.py: the attention applet's page (its data comes from /api/models)."""
from __future__ import annotations

from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app


def test_attention_page_gets_its_name_and_title(tiny_models_dir, tmp_path):
    (tmp_path / "attention.html").write_text("<h1>{{ title }}</h1><main data-page='{{ page }}'></main>")
    with TestClient(create_app(Settings(models_dir=tiny_models_dir, templates_dir=tmp_path))) as c:
        r = c.get("/attention")
    assert r.status_code == 200
    assert r.text == "<h1>Attention</h1><main data-page='attention'></main>"
