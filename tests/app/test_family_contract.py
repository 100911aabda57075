"""A family is a checked contract (issue 54): every family the specs declare (app/contract/families.py)
is checked the same way, by name from the specs and nowhere else. A tiny model of it trains a few steps
and packages with parity (tests/family_set.py), the registry loads it (its smoke_test), and each page
its spec lists answers with it, on the server and on the device (the browser's engine under node,
tests/app/engine_parity.mjs), the same. Its home card and Train-page curve, drawn from its own piece:
tests/browser/test_family_pieces.py. The interface it must meet: docs/training.md, "Adding a family"."""
from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.contract import SPECS, card_file, onnx_file
from app.main import create_app
from tests.app.test_engine_node import NODE, TOLERANCE, assert_same, run_engine
from tests.family_set import STEPS, family_set_dir  # noqa: F401 (the fixture)

pytest.importorskip("torch")

# What each page asks of the families that serve it: the requests its controls send (the page's own
# file says which; a family is not named here, its spec's `pages` picks the rows).
PAGE_REQUESTS = {
    "generate": [["/api/generate", {"prompt": "the king ", "max_new_tokens": 12, "seed": 1}],
                 ["/api/next-token", {"prompt": "the king", "seed": 2}]],
    "mask-fill": [["/api/mask-fill", {"text": "Line 3 speaks of the k[MASK]ng and the crown"}]],
    "nsp": [["/api/nsp/predict", {"a": "Line 3 speaks of love in the garden, again!", "b": "SPEAKER2."}]],
    "compare": [["/api/compare", {"text": "the king is dead", "position": 5}]],
    "attention": [["/api/attention", {"text": "the crown", "pad": 1, "seed": 3}],
                  ["/api/attention", {"text": "a ship upon", "layer": 1, "head": 1, "seed": 8}]],
    "objectives": [["/api/objectives/corrupt", {"text": "Line 3 speaks of war and the sword", "seed": 4}],
                   ["/api/objectives/electra", {"text": "Line 3 speaks of war and the sword", "positions": [2, 9], "seed": 5}]],
    "spans": [["/api/spans", {"text": "Line 3 speaks of the sea", "spans": [[2, 4], [10, 13]]}]],
    "finetune": [],  # the lab trains from the instructor's labels (tests/app/test_finetune*.py); here its page
}
CASES = [case for page in PAGE_REQUESTS.values() for case in page]


@pytest.fixture(scope="module")
def built(family_set_dir):  # noqa: F811
    return family_set_dir


@pytest.fixture(scope="module")
def client(built, tmp_path_factory):
    settings = Settings(models_dir=built / "models", data_dir=tmp_path_factory.mktemp("data"), instructor_token="t" * 32)
    with TestClient(create_app(settings), base_url="http://localhost") as c:
        yield c


@pytest.fixture(scope="module")
def answers(client, built, tmp_path_factory):
    """Every page request, on the server and on the device (one node run for all families)."""
    server = [{"status": r.status_code, "json": r.json()} for r in (client.post(p, json=b) for p, b in CASES)]
    device = run_engine(built / "models", CASES, tmp_path_factory.mktemp("engine")) if NODE else None
    return {json.dumps(case): (s, device[i] if device else None) for i, (case, s) in enumerate(zip(CASES, server))}


def same(a, b, where="") -> None:
    """The device's answer is the server's: the same keys and texts, numbers within TOLERANCE."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), (where, a, b)
        for k in a:
            same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (where, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert abs(a - b) <= TOLERANCE, (where, a, b)
    else:
        assert a == b, (where, a, b)


@pytest.mark.parametrize("name", list(SPECS))
def test_a_tiny_model_trains_and_packages_with_parity(built, name):
    card = json.loads((built / "models" / card_file(name)).read_text(encoding="utf-8"))
    assert card["family"] == name and card["attention"] == SPECS[name].attention  # declared once, in the spec
    assert card["training"]["steps"] in (STEPS, 30) and card["curves"] and card["parameters"] > 0
    assert (built / "models" / onnx_file(name)).is_file() and (built / "runs" / name / "ckpt.pt").is_file()
    assert card["onnx"]["parity_max_abs_diff"] <= 1e-4  # ONNX against PyTorch, at several lengths
    assert card["evaluation"]  # its held-out figures, by its own evaluation


@pytest.mark.parametrize("name", list(SPECS))
def test_the_registry_loads_it_and_its_smoke_test_passes(client, name):
    models = client.app.state.registry.get(None)
    assert getattr(models, name) is not None, models.__dict__.get("failed")
    getattr(models, name).smoke_test()
    listed = client.get("/api/models").json()
    assert name in listed["cards"]


@pytest.mark.parametrize("name", list(SPECS))
def test_each_page_its_spec_lists_answers_on_the_server_and_the_device(client, answers, name):
    spec = SPECS[name]
    assert set(spec.pages) <= set(PAGE_REQUESTS), "a page without its requests here"
    for page in spec.pages:
        assert client.get("/" + page).status_code == 200, page
        for case in PAGE_REQUESTS[page]:
            server, device = answers[json.dumps(case)]
            assert server["status"] == 200, (case, server)
            if isinstance(server["json"].get(name, 0), (dict, type(None))):  # an answer keyed by family: its own part
                assert server["json"].get(name, 0) is not None, (case, "no answer from", name)
            if device is None or device["status"] is None:  # no node here, or a route the server alone answers
                continue
            try:
                assert_same(case[0], server, device)
            except (KeyError, TypeError):  # a route the curated comparison does not know: all of it, numbers within 1e-4
                same(server["json"], device["json"], case[0])

