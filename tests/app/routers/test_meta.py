"""app/routers/meta.py: health, model cards, home page."""
from __future__ import annotations

import json

from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app


def test_health_reports_both_models(client):
    r = client.get("/api/health")
    body = r.json()
    assert r.status_code == 200
    assert body["status"] == "ok" and body["models"] == {"gpt": True, "bert": True}
    assert body["sets"] == {client.app.state.registry.default_id: {"status": "ok", "problems": []}}


def test_models_returns_vocab_and_the_shipped_cards(client, tiny_models_dir):
    body = client.get("/api/models").json()
    vocab = json.loads((tiny_models_dir / "vocab.json").read_text())
    assert body["vocab"] == {"specials": vocab["specials"], "chars": vocab["chars"]}
    for name in ("gpt", "bert"):
        assert body["cards"][name] == json.loads((tiny_models_dir / f"{name}.card.json").read_text())
    assert body["cards"]["gpt"]["attention"] == "causal"


def test_missing_models_degrade_to_503_not_a_crash(tmp_path):
    with TestClient(create_app(Settings(models_dir=tmp_path))) as c:
        r = c.get("/api/health")
        assert r.status_code == 503  # load balancers and curl -f read the status code
        assert r.json()["status"] == "degraded" and r.json()["models"] == {"gpt": False, "bert": False}
        for method, url, body in [("post", "/api/next-token", {"prompt": "a"}),
                                  ("post", "/api/mask-fill", {"text": "a[MASK]"}),
                                  ("get", "/api/nsp/quiz", None), ("get", "/api/models", None)]:
            r = c.request(method.upper(), url, json=body)
            assert r.status_code == 503, url
            assert str(tmp_path) not in r.text and "Traceback" not in r.text


def test_pages_render_their_template_with_page_and_title(tiny_models_dir, tmp_path):
    templates = tmp_path / "templates"
    templates.mkdir()
    pages = {"/": "home.html", "/mask-fill": "mask_fill.html", "/generate": "generate.html",
             "/nsp": "nsp.html", "/attention": "attention.html"}
    for name in pages.values():
        (templates / name).write_text("{{ page }}|{{ title }}|{{ request.url.path }}")
    settings = Settings(models_dir=tiny_models_dir, templates_dir=templates, static_dir=tmp_path / "none")
    with TestClient(create_app(settings)) as c:
        seen = {}
        for path in pages:
            r = c.get(path)
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
            page, title, url = r.text.split("|")
            assert url == path and title
            seen[path] = page
        assert seen == {"/": "home", "/mask-fill": "mask_fill", "/generate": "generate", "/nsp": "nsp",
                        "/attention": "attention"}
        # pages are not API: they stay out of the OpenAPI schema
        assert set(c.get("/openapi.json").json()["paths"]) & set(pages) == set()


def test_missing_template_is_a_clean_error(tiny_models_dir, tmp_path):
    settings = Settings(models_dir=tiny_models_dir, templates_dir=tmp_path)
    with TestClient(create_app(settings)) as c:
        r = c.get("/nsp")
        assert r.status_code == 503 and r.json()["parameter"] is None
        assert str(tmp_path) not in r.text


def test_static_files_are_served_from_the_static_dir(tiny_models_dir, tmp_path):
    (tmp_path / "style.css").write_text("body{}")
    with TestClient(create_app(Settings(models_dir=tiny_models_dir, static_dir=tmp_path))) as c:
        assert c.get("/static/style.css").text == "body{}"
        assert c.get("/static/nope.js").status_code == 404


def test_no_card_in_the_model_listing_shows_a_server_path(tmp_path):
    """Issue 34: GET /api/models showed a classifier card's base_model.folder as a server path."""
    from tests.conftest import SHIPPED_MODELS

    models, data = tmp_path / "models", tmp_path / "data"
    models.mkdir()
    for f in SHIPPED_MODELS.iterdir():
        (models / f.name).symlink_to(f)
    (models / "bert.card.json").unlink()
    card = json.loads((SHIPPED_MODELS / "bert.card.json").read_text())
    card["base_model"] = {"folder": str(data / "runs" / "r1" / "final"), "set_id": "r1"}
    card["made_from"] = "/home/teacher/secret/corpus.txt"
    (models / "bert.card.json").write_text(json.dumps(card))
    with TestClient(create_app(Settings(models_dir=models, data_dir=data))) as c:
        listing = c.get("/api/models")
        assert listing.status_code == 200, listing.text
        body = listing.json()
        assert body["cards"]["bert"]["base_model"]["folder"] == "data/runs/r1/final"
        assert body["cards"]["bert"]["made_from"] == "corpus.txt"
        assert str(tmp_path) not in listing.text and "/home/teacher" not in listing.text
        detail = c.get(f"/api/models/{body['default']}").json()
        assert detail["cards"]["bert"]["base_model"]["folder"] == "data/runs/r1/final"


def test_the_list_sends_each_card_once_and_curves_only_where_drawn(client, tiny_models_dir):
    """Issue 44 must 4: GET /api/models (every page asks it) held each card twice with its loss curves;
    the default set's cards are the response's own, the list's sets carry theirs without curves, and
    GET /api/models/{id} (the home page's cards of a chosen set) keeps them."""
    body = client.get("/api/models").json()
    default = next(s for s in body["sets"] if s["id"] == body["default"])
    assert default["cards"] == {} and body["cards"]["gpt"]["curves"]
    assert all("curves" not in card for s in body["sets"] for card in s["cards"].values())
    one = client.get(f"/api/models/{body['default']}").json()
    assert one["cards"]["gpt"]["curves"] == body["cards"]["gpt"]["curves"]
