"""app/routers/mask_fill.py: /api/mask-fill and /api/mask-fill/corrupt."""
from __future__ import annotations

import numpy as np
import pytest

from app.contract import FIRST_CHAR, MASK
from app.sampling import softmax


def test_markers_become_single_mask_tokens(client, models):
    r = client.post("/api/mask-fill", json={"text": "the k[MASK]ng and [MASK]he crown", "top_k": 3})
    assert r.status_code == 200
    body = r.json()
    assert body["tokens"][:6] == ["t", "h", "e", " ", "k", "[MASK]"]
    assert len(body["tokens"]) == len("the king and the crown")
    assert [m["position"] for m in body["masks"]] == [5, 13]
    assert body["unknown_chars"] == []
    # the probabilities are BERT's softmax over ordinary characters at that position
    ids, _ = models.vocab.encode("the king and the crown")
    ids[5], ids[13] = MASK, MASK
    mlm, _ = models.bert.forward([3, *ids, 4])
    probs = softmax(mlm[1 + 5, FIRST_CHAR:])
    first = body["masks"][0]
    assert len(first["predictions"]) == 3 and first["original"] is None
    assert first["predictions"][0]["char"] == models.vocab.chars[int(np.argmax(probs))]
    assert first["predictions"][0]["prob"] == pytest.approx(float(probs.max()), rel=1e-5)


def test_positions_mask_characters_and_score_the_original(client):
    r = client.post("/api/mask-fill", json={"text": "the king", "positions": [4, 0], "top_k": 46})
    assert r.status_code == 200
    body = r.json()
    assert body["tokens"] == ["[MASK]", "h", "e", " ", "[MASK]", "i", "n", "g"]
    k, t = body["masks"]
    assert (k["position"], t["position"]) == (4, 0)  # in the order given
    assert k["original"]["char"] == "k"
    ranked = [p["char"] for p in k["predictions"]]
    assert ranked[k["original"]["rank"] - 1] == "k"  # all 41 characters are listed, so the rank is checkable
    assert k["predictions"][k["original"]["rank"] - 1]["prob"] == pytest.approx(k["original"]["prob"])


def test_unknown_chars_map_to_unk_and_are_reported(client):
    body = client.post("/api/mask-fill", json={"text": "é[MASK]ß"}).json()
    assert body["tokens"] == ["[UNK]", "[MASK]", "[UNK]"]
    assert body["unknown_chars"] == [{"position": 0, "char": "é", "segment": None},
                                     {"position": 2, "char": "ß", "segment": None}]
    # clicking an unknown character masks it but has no original score
    body = client.post("/api/mask-fill", json={"text": "aé", "positions": [1]}).json()
    assert body["masks"][0]["original"] is None


def test_corrupt_follows_seed_and_reports_each_selected_position(client):
    req = {"text": "the king and the crown, a ship upon the sea", "mask_rate": 0.5, "seed": 11}
    a, b = client.post("/api/mask-fill/corrupt", json=req).json(), client.post("/api/mask-fill/corrupt", json=req).json()
    assert a == b
    assert a["tokens"] == list(req["text"])
    assert len(a["corrupted"]) == len(a["tokens"]) and a["selected"]
    for s in a["selected"]:
        assert a["tokens"][s["position"]] == s["original"]
        assert a["corrupted"][s["position"]] == s["shown"]
        assert s["correct"] == (s["prediction"] == s["original"])
        assert len(s["top"]) == 5 and s["top"][0]["char"] == s["prediction"]
    assert a["accuracy"] == pytest.approx(sum(s["correct"] for s in a["selected"]) / len(a["selected"]))
    unselected = set(range(len(a["tokens"]))) - {s["position"] for s in a["selected"]}
    assert all(a["corrupted"][i] == a["tokens"][i] for i in unselected)


def test_corrupt_with_nothing_selected_has_null_accuracy(client):
    body = client.post("/api/mask-fill/corrupt", json={"text": "a", "mask_rate": 1e-9}).json()
    assert body["selected"] == [] and body["accuracy"] is None


LONG = "a" * 63  # the tiny BERT has context 64: 62 characters fit


@pytest.mark.parametrize("url,body,status,parameter", [
    ("/api/mask-fill", {"text": ""}, 422, "text"),
    ("/api/mask-fill", {"text": "no marker here"}, 422, "text"),
    ("/api/mask-fill", {"text": LONG[:-1] + "[MASK]"}, 422, "text"),
    ("/api/mask-fill", {"text": "[MASK]" * 33}, 422, "text"),
    ("/api/mask-fill", {"text": "abc", "positions": []}, 422, "positions"),
    ("/api/mask-fill", {"text": "abc", "positions": [3]}, 422, "positions"),
    ("/api/mask-fill", {"text": "abc", "positions": [-1]}, 422, "positions"),
    ("/api/mask-fill", {"text": "abc", "positions": [1, 1]}, 422, "positions"),
    ("/api/mask-fill", {"text": "a" * 40, "positions": list(range(33))}, 422, "positions"),
    ("/api/mask-fill", {"text": "a[MASK]", "positions": [0]}, 422, "positions"),
    ("/api/mask-fill", {"text": "a[MASK]", "top_k": 0}, 422, "top_k"),
    ("/api/mask-fill", {"text": "a[MASK]", "top_k": 47}, 422, "top_k"),
    ("/api/mask-fill", {"text": "a[MASK]", "positions": ["x"]}, 422, "positions"),
    ("/api/mask-fill", {"text": 5}, 422, "text"),
    ("/api/mask-fill", {}, 422, "text"),
    ("/api/mask-fill/corrupt", {"text": ""}, 422, "text"),
    ("/api/mask-fill/corrupt", {"text": LONG}, 422, "text"),
    ("/api/mask-fill/corrupt", {"text": "abc", "mask_rate": 0}, 422, "mask_rate"),
    ("/api/mask-fill/corrupt", {"text": "abc", "mask_rate": 1.5}, 422, "mask_rate"),
    ("/api/mask-fill/corrupt", {"text": "abc", "seed": -1}, 422, "seed"),
])
def test_bad_input_is_a_4xx_naming_the_parameter(client, url, body, status, parameter):
    r = client.post(url, json=body)
    assert r.status_code == status
    assert r.json()["parameter"] == parameter
    assert parameter in r.json()["detail"]


def test_too_long_text_states_the_limit(client):
    r = client.post("/api/mask-fill", json={"text": LONG + "[MASK]"})
    assert "62" in r.json()["detail"]
    assert client.post("/api/mask-fill", json={"text": LONG[:-2] + "[MASK]"}).status_code == 200  # 62 tokens fit


@pytest.mark.parametrize("raw", [b'{"text": "a[MASK]", "mask_rate": NaN}', b'{"text": "a[MASK]", "mask_rate": Infinity}'])
def test_non_finite_numbers_are_refused(client, raw):
    r = client.post("/api/mask-fill/corrupt", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["parameter"] == "mask_rate"
