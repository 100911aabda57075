"""POST /api/objectives/electra: the discriminator's live "replaced?" probability at every character,
after the set's BERT (the generator) filled every masked position; 409 for a set without ELECTRA."""
import contextlib
import io
import shutil

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app


@pytest.fixture(scope="module")
def electra_client(tiny_models_dir, tiny_corpus, tmp_path_factory):
    from training.package import package
    from training.train import TrainConfig, Trainer

    run = tmp_path_factory.mktemp("electra-run")
    cfg = TrainConfig(family="electra", corpus=str(tiny_corpus), out=str(run), n_layer=1, n_head=2, n_embd=32,
                      n_ff=64, context=64, batch_size=8, steps=10, eval_interval=10, eval_batches=1, warmup=2, lr=3e-3)
    with contextlib.redirect_stderr(io.StringIO()):
        Trainer(cfg).fit(log=io.StringIO())
    models = tmp_path_factory.mktemp("electra-set") / "set"
    shutil.copytree(tiny_models_dir, models)
    package([str(run / "ckpt.pt")], models)
    with TestClient(create_app(Settings(models_dir=models))) as c:
        yield c


@pytest.mark.slow
def test_generator_fills_every_masked_position(electra_client):
    text = "Line 3 speaks of the king and the crown"
    r = electra_client.post("/api/objectives/electra", json={"text": text, "positions": [0, 5, 9, 20], "seed": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    assert len(body["chars"]) == len(text) and body["filled"] == 4
    for i, c in enumerate(body["chars"]):
        assert c["filled"] == (i in (0, 5, 9, 20)) and 0.0 <= c["p_replaced"] <= 1.0
        assert c["replaced"] == (c["char"] != c["original"])
        if not c["filled"]:
            assert c["char"] == text[i]  # only filled positions can change
    assert body["replaced"] == sum(c["replaced"] for c in body["chars"])
    assert body["correct"] == sum((c["p_replaced"] > 0.5) == c["replaced"] for c in body["chars"])
    again = electra_client.post("/api/objectives/electra", json={"text": text, "positions": [0, 5, 9, 20], "seed": 3})
    assert again.json() == body  # seeded: the same fills


@pytest.mark.slow
def test_own_sentence_is_judged_as_typed(electra_client):
    body = electra_client.post("/api/objectives/electra", json={"text": "the kong and the crewn"}).json()
    assert body["filled"] == 0 and body["replaced"] == 0
    assert "".join(c["char"] for c in body["chars"]) == "the kong and the crewn"


@pytest.mark.slow
def test_bad_input_names_the_parameter(electra_client):
    r = electra_client.post("/api/objectives/electra", json={"text": "abc", "positions": [7]})
    assert r.status_code == 422 and "positions" in r.text
    r = electra_client.post("/api/objectives/electra", json={"text": "x" * 200})
    assert r.status_code == 422 and "text" in r.text


def test_a_set_without_electra_says_so(client):
    r = client.post("/api/objectives/electra", json={"text": "the king"})
    assert r.status_code in (409, 503) and "model" in r.text
