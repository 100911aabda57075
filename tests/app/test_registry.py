"""app/registry.py: model sets side by side, `model` routing, errors, sets added at run time,
broken sets that degrade (with health 503 saying which and why), the loaded-set bound."""
from __future__ import annotations

import json
import shutil

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app


def copy_set(src, dst, set_id, drop=()):
    shutil.copytree(src, dst)
    (dst / "set.json").write_text(json.dumps({"id": set_id, "name": f"Set {set_id}"}))
    for name in drop:
        (dst / name).unlink()
    return dst


@pytest.fixture(scope="module")
def two_sets(tiny_models_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("sets")
    bert_only = copy_set(tiny_models_dir, root / "bert_only", "bertonly", drop=("gpt.onnx", "gpt.card.json"))
    app = create_app(Settings(models_dir=tiny_models_dir, extra_models=[bert_only]))
    with TestClient(app) as c:
        yield c


def test_models_lists_every_set_with_cards_and_limits(two_sets):
    body = two_sets.get("/api/models").json()
    ids = [s["id"] for s in body["sets"]]
    assert body["default"] == ids[0] and "bertonly" in ids
    extra = next(s for s in body["sets"] if s["id"] == "bertonly")
    assert extra["families"] == ["bert"] and set(extra["cards"]) == {"bert"} and extra["name"] == "Set bertonly"
    assert body["limits"]["max_masks"] == 32 and body["limits"]["max_seed"] == 2**32 - 1


def test_model_routes_to_the_named_set(two_sets):
    r = two_sets.post("/api/mask-fill", json={"text": "the [MASK]ing", "model": "bertonly"})
    assert r.status_code == 200 and len(r.json()["masks"]) == 1
    detail = two_sets.get("/api/models/bertonly").json()
    assert detail["status"] == "ok" and detail["vocab"]["chars"]
    # sets given at startup are checked at startup: health reports them from the first request
    assert two_sets.get("/api/health").json()["sets"]["bertonly"] == {"status": "ok", "problems": []}


def test_sets_added_later_load_on_first_use(two_sets, tiny_models_dir, tmp_path):
    registry = two_sets.app.state.registry
    registry.add(copy_set(tiny_models_dir, tmp_path / "lazy", "lazy"), kind="run")
    try:
        assert "lazy" not in [s.id for s in registry.loaded_sets()]  # listed, not loaded yet
        listed = {s["id"]: s for s in two_sets.get("/api/models").json()["sets"]}
        assert listed["lazy"]["status"] == "not loaded"
        assert two_sets.post("/api/mask-fill", json={"text": "a[MASK]", "model": "lazy"}).status_code == 200
        assert "lazy" in [s.id for s in registry.loaded_sets()]
    finally:
        registry.drop("lazy")


def test_unknown_model_is_404_naming_model(two_sets):
    for method, url, kw in [("POST", "/api/next-token", {"json": {"prompt": "a", "model": "nope"}}),
                            ("POST", "/api/mask-fill", {"json": {"text": "a[MASK]", "model": "nope"}}),
                            ("GET", "/api/generate/stream", {"params": {"prompt": "a", "model": "nope"}}),
                            ("GET", "/api/nsp/quiz", {"params": {"model": "nope"}}),
                            ("GET", "/api/models/nope", {})]:
        r = two_sets.request(method, url, **kw)
        assert r.status_code == 404, url
        assert "nope" in r.json()["detail"]
        if url != "/api/models/nope":
            assert r.json()["parameter"] == "model"


def test_malformed_model_id_is_422(two_sets):
    r = two_sets.post("/api/next-token", json={"prompt": "a", "model": "../etc"})
    assert r.status_code == 422 and r.json()["parameter"] == "model"


def test_set_without_the_model_is_409_with_a_sentence(two_sets):
    r = two_sets.post("/api/generate", json={"prompt": "a", "model": "bertonly"})
    assert r.status_code == 409 and r.json()["parameter"] == "model"
    assert "has no GPT" in r.json()["detail"]


def test_a_set_added_at_run_time_is_listed_and_served(two_sets, tiny_models_dir, tmp_path):
    folder = copy_set(tiny_models_dir, tmp_path / "late", "late")
    registry = two_sets.app.state.registry
    registry.add(folder, name="Late set", kind="run", run="r1")
    try:
        listed = {s["id"]: s for s in two_sets.get("/api/models").json()["sets"]}
        assert listed["late"]["kind"] == "run" and listed["late"]["name"] == "Late set"
        r = two_sets.post("/api/generate", json={"prompt": "the", "max_new_tokens": 5, "model": "late"})
        assert r.status_code == 200 and len(r.json()["steps"]) == 5
    finally:
        registry.drop("late")
    assert two_sets.post("/api/generate", json={"prompt": "a", "model": "late"}).status_code == 404


def test_health_and_pages_answer_head(two_sets):
    for path in ("/api/health", "/", "/mask-fill", "/generate", "/nsp", "/attention"):
        r = two_sets.head(path)
        assert r.status_code == 200, path


def test_only_a_bounded_number_of_sets_stays_loaded(tiny_models_dir, tmp_path):
    extra = [copy_set(tiny_models_dir, tmp_path / f"s{i}", f"s{i}") for i in range(3)]
    with TestClient(create_app(Settings(models_dir=tiny_models_dir, extra_models=extra, max_loaded_sets=1))) as c:
        for i in range(3):
            assert c.post("/api/mask-fill", json={"text": "a[MASK]", "model": f"s{i}"}).status_code == 200
        loaded = [s.id for s in c.app.state.registry.loaded_sets()]
        assert loaded == [c.app.state.registry.default_id, "s2"]  # the default is kept; one other


# ---- broken sets degrade: not served, and health says which and why ----

def broken_app(tiny_models_dir, tmp_path, edit):
    folder = copy_set(tiny_models_dir, tmp_path / "broken", "broken")
    edit(folder)
    return TestClient(create_app(Settings(models_dir=folder)))


def edit_card(folder, family, **config):
    card = json.loads((folder / f"{family}.card.json").read_text())
    card["config"].update(config)
    (folder / f"{family}.card.json").write_text(json.dumps(card))


@pytest.mark.parametrize("case, edit, family, reason", [
    ("gpt card context disagrees with the graph", lambda f: edit_card(f, "gpt", context=999), "gpt", "shape"),
    ("bert card context longer than its positions", lambda f: edit_card(f, "bert", context=999), "bert", "bert"),
    ("card vocab size disagrees", lambda f: edit_card(f, "gpt", vocab_size=3), "gpt", "vocab"),
    ("graph of the other family", lambda f: shutil.copy(f / "bert.onnx", f / "gpt.onnx"), "gpt", "inputs"),
    ("truncated graph", lambda f: (f / "bert.onnx").write_bytes((f / "bert.onnx").read_bytes()[:1000]), "bert", "bert"),
])
def test_broken_model_is_not_served_and_health_says_why(tiny_models_dir, tmp_path, case, edit, family, reason):
    with broken_app(tiny_models_dir, tmp_path, edit) as c:
        health = c.get("/api/health")
        assert health.status_code == 503, case
        problems = health.json()["sets"]["broken"]["problems"]
        assert any(p.startswith(family) and reason in p for p in problems), problems
        assert health.json()["models"][family] is False
        other = "bert" if family == "gpt" else "gpt"
        assert health.json()["models"][other] is True  # the rest is still served
        url, body = (("/api/next-token", {"prompt": "ab"}) if family == "gpt"
                     else ("/api/mask-fill", {"text": "a[MASK]"}))
        assert c.post(url, json=body).status_code == 503


@pytest.mark.parametrize("item_edit", [
    lambda it: it.pop("is_next"), lambda it: it.update(is_next="yes"), lambda it: it.update(a=""),
    lambda it: it.update(b="x" * 500), lambda it: it.update(source_a=None), lambda it: it.update(id="x/y"),
])
def test_bad_quiz_bank_is_not_served(tiny_models_dir, tmp_path, item_edit):
    def edit(folder):
        bank = json.loads((folder / "nsp_quiz.json").read_text())
        item_edit(bank["items"][3])
        (folder / "nsp_quiz.json").write_text(json.dumps(bank))

    with broken_app(tiny_models_dir, tmp_path, edit) as c:
        health = c.get("/api/health")
        assert health.status_code == 503
        assert any("item 3" in p for p in health.json()["sets"]["broken"]["problems"])
        assert c.get("/api/nsp/quiz").status_code == 503
        assert c.post("/api/nsp/predict", json={"a": "x", "b": "y"}).status_code == 200  # BERT still served


def test_problems_name_files_not_server_paths_and_the_503_names_model(tiny_models_dir, tmp_path):
    def edit(folder):
        (folder / "gpt.onnx").unlink()
        (folder / "bert.card.json").write_text("[]")  # not an object

    with broken_app(tiny_models_dir, tmp_path, edit) as c:
        health = c.get("/api/health")
        assert health.status_code == 503 and str(tmp_path) not in health.text
        problems = health.json()["sets"]["broken"]["problems"]
        assert "gpt: gpt.onnx missing" in problems and any(p.startswith("bert: the card") for p in problems)
        listed = c.get("/api/models")  # a card that is not an object is left out, not a 500
        assert listed.status_code == 200 and "bert" not in listed.json()["cards"]
        r = c.post("/api/next-token", json={"prompt": "ab"})
        assert r.status_code == 503 and r.json()["parameter"] == "model"


def test_a_broken_extra_set_is_listed_with_its_problems(tiny_models_dir, tmp_path):
    bad = copy_set(tiny_models_dir, tmp_path / "bad", "bad")
    (bad / "bert.card.json").write_text("[]")
    with TestClient(create_app(Settings(models_dir=tiny_models_dir, extra_models=[bad]))) as c:
        listed = {s["id"]: s for s in c.get("/api/models").json()["sets"]}
        assert listed["bad"]["status"] == "degraded" and listed["bad"]["cards"].keys() == {"gpt"}
        health = c.get("/api/health")  # the default set is fine: the server stays in a load balancer
        assert health.status_code == 200 and health.json()["status"] == "degraded"
        assert any(p.startswith("bert") for p in health.json()["sets"]["bad"]["problems"])


def test_the_default_set_cannot_be_dropped(two_sets):
    registry = two_sets.app.state.registry
    with pytest.raises(ValueError):
        registry.drop(registry.default_id)
    assert two_sets.get("/api/health").status_code == 200
