"""The lesson views (issue 13): /api/compare, /api/attention, /api/objectives/*, /api/concepts, and
their pages; the numbers are held to the other endpoints' and to PyTorch's on the tiny models."""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.contract import FIRST_CHAR
from app.main import create_app

TEXT = "the king and the crown"


# ---- GPT vs BERT on the same blank ----

@pytest.mark.parametrize("pos", [1, 4, 9, len(TEXT) - 1])
def test_compare_equals_next_token_and_mask_fill(client, pos):
    r = client.post("/api/compare", json={"text": TEXT, "position": pos, "top_k": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["char"] == TEXT[pos] and body["position"] == pos
    nt = client.post("/api/next-token", json={"prompt": TEXT[:pos]}).json()
    raw = np.asarray(nt["raw"])
    k = nt["chars"].index(TEXT[pos])
    g = body["gpt"]
    assert g["available"] and g["p_true"] == pytest.approx(raw[k], abs=1e-9)
    assert g["rank"] == int((raw > raw[k]).sum()) + 1
    assert g["entropy"] == pytest.approx(nt["entropy"]["raw"], abs=1e-9)
    mf = client.post("/api/mask-fill", json={"text": TEXT, "positions": [pos], "top_k": 3}).json()["masks"][0]
    b = body["bert"]
    assert b["p_true"] == pytest.approx(mf["original"]["prob"], abs=1e-9)
    assert b["rank"] == mf["original"]["rank"]
    assert [t["char"] for t in b["top"]] == [t["char"] for t in mf["predictions"]]
    # the strip (batched runs) agrees with the per-position numbers
    s = body["strip"][pos]
    assert s["char"] == TEXT[pos]
    assert s["gpt"] == pytest.approx(g["p_true"], abs=1e-4) and s["bert"] == pytest.approx(b["p_true"], abs=1e-4)


def test_compare_position_zero_and_strip_off(client):
    body = client.post("/api/compare", json={"text": TEXT, "position": 0, "strip": False}).json()
    assert body["gpt"]["available"] is False and body["gpt"]["p_true"] is None
    assert body["bert"]["available"] and 0 < body["bert"]["p_true"] < 1
    assert body["strip"] is None
    strip = client.post("/api/compare", json={"text": TEXT, "position": 0}).json()["strip"]
    assert [s["char"] for s in strip] == list(TEXT) and strip[0]["gpt"] is None


@pytest.mark.parametrize("body, param", [
    ({"text": TEXT, "position": len(TEXT)}, "position"),
    ({"text": TEXT, "position": -1}, "position"),
    ({"text": "", "position": 0}, "text"),
    ({"text": "x" * 65, "position": 0}, "text"),
    ({"text": TEXT, "position": 0, "model": "nope"}, "model"),
])
def test_compare_rejects_bad_input(client, body, param):
    r = client.post("/api/compare", json=body)
    assert 400 <= r.status_code < 500 and r.json()["parameter"] == param


# ---- real attention ----

def reference(tiny_runs_dir, family, ids):
    torch = pytest.importorskip("torch")
    from training.inspect_export import reference_weights
    from training.train import load_checkpoint

    _, model, _, _ = load_checkpoint(tiny_runs_dir / family / "ckpt.pt")
    t = torch.tensor([ids])
    _, ws = reference_weights(model, t, *([torch.zeros_like(t)] if family == "bert" else []))
    return np.stack([w[0].numpy() for w in ws])


@pytest.mark.parametrize("layer, head", [(0, 1), (1, -1), (-1, 0), (-1, -1)])
def test_attention_weights_match_pytorch_and_rows_sum_to_one(client, models, tiny_runs_dir, layer, head):
    r = client.post("/api/attention", json={"text": "the crown", "pad": 3, "layer": layer, "head": head})
    assert r.status_code == 200, r.text
    body = r.json()
    g, b = body["gpt"], body["bert"]
    assert g["tokens"] == list("the crown")
    assert b["tokens"] == ["[CLS]", *"the crown", "[SEP]", "[PAD]", "[PAD]", "[PAD]"]
    assert (g["layer"], g["head"], b["layer"], b["head"]) == (layer, head, layer, head)
    gw, bw = np.asarray(g["weights"]), np.asarray(b["weights"])
    assert gw.shape == (9, 9) and bw.shape == (14, 14)
    ids, _ = models.vocab.encode("the crown")

    def chosen(w):  # (layer, head, q, k) -> the requested grid, -1 = mean over that axis
        w = w.mean(axis=0) if layer < 0 else w[layer]
        return w.mean(axis=0) if head < 0 else w[head]
    assert np.abs(gw - chosen(reference(tiny_runs_dir, "gpt", ids))).max() <= 1e-4
    assert np.abs(bw - chosen(reference(tiny_runs_dir, "bert", [3, *ids, 4, 0, 0, 0]))).max() <= 1e-4
    # rows sum to 1 over the allowed keys (to the 4 decimals sent); the blocked cells are empty
    causal = np.tril(np.ones((9, 9), dtype=bool))
    assert np.allclose(np.where(causal, gw, 0).sum(-1), 1, atol=1e-3) and np.abs(gw[~causal]).max() == 0
    assert np.allclose(bw[:, :11].sum(-1), 1, atol=1e-3) and np.abs(bw[:, 11:]).max() == 0
    assert g["served_logits_max_abs_diff"] <= 1e-4 and b["served_logits_max_abs_diff"] <= 1e-4
    assert g["blocked_max"] == 0 and b["blocked_max"] == 0 and max(g["row_sum_max_error"], b["row_sum_max_error"]) <= 1e-5


def test_attention_sends_one_grid_per_model_not_every_layer(client):
    """A 43-character sentence (the longest the page sends is shorter) answers in a few tens of KB,
    uncompressed: one (query, key) grid per model, rounded; every layer and head was ~2 MB."""
    text = "Friends, Romans, countrymen, lend me your e"
    assert len(text) == 43
    for layer, head in ((-1, -1), (1, 1)):
        r = client.post("/api/attention", json={"text": text, "pad": 2, "layer": layer, "head": head},
                        headers={"Accept-Encoding": "identity"})
        assert r.status_code == 200 and "gzip" not in r.headers.get("content-encoding", "")
        assert len(r.content) <= 48 * 1024, len(r.content)
        assert max(len(x) for row in r.json()["gpt"]["weights"] for x in map(str, row)) <= len("0.1234")


def test_attention_without_inspection_graph_is_a_409_naming_model(tiny_models_dir, tmp_path):
    folder = tmp_path / "bare"
    shutil.copytree(tiny_models_dir, folder, ignore=shutil.ignore_patterns("*.attn.onnx"))
    with TestClient(create_app(Settings(models_dir=folder))) as c:
        r = c.post("/api/attention", json={"text": "the"})
    assert r.status_code == 409 and r.json()["parameter"] == "model"
    assert "inspect_export" in r.json()["detail"]


@pytest.mark.parametrize("body, param", [({"text": ""}, "text"), ({"text": "x" * 49}, "text"),
                                         ({"text": "ab", "pad": 9}, "pad"), ({"text": "ab", "extra": 1}, "extra"),
                                         ({"text": "ab", "layer": 2}, "layer"), ({"text": "ab", "head": -2}, "head"),
                                         ({"text": "ab", "head": 2}, "head")])
def test_attention_rejects_bad_input(client, body, param):
    r = client.post("/api/attention", json=body)
    assert r.status_code == 422 and r.json()["parameter"] == param


# ---- objectives ----

def test_objectives_losses_equal_pytorch(client, models, tiny_runs_dir):
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    from training.train import load_checkpoint

    text = "the king and the crown, and the ghost at night"
    body = client.post("/api/objectives/corrupt", json={"text": text, "scheme": "span", "mask_rate": 0.3, "seed": 3}).json()
    ids, _ = models.vocab.encode(text)
    # CLM: mean over every position of -log p(next | left), as GPT's training loss
    _, gpt, _, _ = load_checkpoint(tiny_runs_dir / "gpt" / "ckpt.pt")
    t = torch.tensor([ids])
    with torch.no_grad():
        logits = gpt(t[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), t[:, 1:].reshape(-1))
    assert body["clm"]["positions"] == len(text) - 1
    assert body["clm"]["loss"] == pytest.approx(float(loss), abs=1e-4)
    # MLM: mean over the selected positions of -log p(original | corrupted), as BERT's training loss
    _, bert, _, _ = load_checkpoint(tiny_runs_dir / "bert" / "ckpt.pt")
    corrupted = [models.vocab.stoi.get(c, 2) if c != "[MASK]" else 2 for c in body["corrupted"]]
    labels = torch.full((1, len(ids) + 2), -100)
    for s in body["selected"]:
        labels[0, s["position"] + 1] = ids[s["position"]]
    x = torch.tensor([[3, *corrupted, 4]])
    with torch.no_grad():
        mlm, _ = bert(x, torch.zeros_like(x))
    ref = F.cross_entropy(mlm.view(-1, mlm.size(-1)), labels.view(-1), ignore_index=-100)
    assert body["mlm"]["positions"] == len(body["selected"]) > 0
    assert body["mlm"]["loss"] == pytest.approx(float(ref), abs=1e-4)
    # spans: every unit is one contiguous run; ELECTRA's label is "the model saw another character"
    for unit in body["units"]:
        assert unit == list(range(unit[0], unit[-1] + 1))
    for s in body["selected"]:
        assert s["replaced"] == (s["action"] == "random" and s["shown"] != s["original"])


def test_recovery_split_by_action(client):
    r = client.post("/api/objectives/recovery", json={"scheme": "char", "draws": 30, "seed": 1})
    assert r.status_code == 200, r.text
    body = r.json()
    by = body["by_action"]
    assert set(by) == {"mask", "random", "unchanged"}
    assert sum(s["positions"] for s in by.values()) == body["positions"] > 0
    assert by["mask"]["positions"] > by["random"]["positions"]  # 80 % vs 10 %
    for s in by.values():
        assert 0 <= s["recovered"] <= s["positions"]
    assert body["selected_rate"] == pytest.approx(0.15, abs=0.04)
    assert "nsp_quiz.json" in body["source"]
    again = client.post("/api/objectives/recovery", json={"scheme": "char", "draws": 30, "seed": 1}).json()
    assert again == body  # the same seed gives the same draws


@pytest.mark.parametrize("body, param", [({"scheme": "bytes"}, "scheme"), ({"draws": 0}, "draws"),
                                         ({"draws": 201}, "draws"), ({"mask_rate": 0.9}, "mask_rate")])
def test_recovery_rejects_bad_input(client, body, param):
    r = client.post("/api/objectives/recovery", json=body)
    assert r.status_code == 422 and r.json()["parameter"] == param


def test_objectives_corrupt_rejects_text_past_the_context(client, models):
    r = client.post("/api/objectives/corrupt", json={"text": "a" * (models.bert.context - 1)})
    assert r.status_code == 422 and r.json()["parameter"] == "text"


# ---- concept check ----

def test_concepts_class_set_fixes_the_order(client):
    bank = client.get("/api/concepts").json()
    ids = [q["id"] for q in bank["questions"]]
    assert len(ids) >= 12 and len(set(ids)) == len(ids) and bank["order"] is None
    a = client.get("/api/concepts", params={"order": 7}).json()
    b = client.get("/api/concepts", params={"order": 7}).json()
    c = client.get("/api/concepts", params={"order": 8}).json()
    assert a == b and sorted(q["id"] for q in a["questions"]) == sorted(ids)
    assert [q["id"] for q in a["questions"]] != [q["id"] for q in c["questions"]]
    assert [q["number"] for q in a["questions"]] == list(range(1, len(ids) + 1))
    assert all("answer" not in q and "explanation" not in q for q in a["questions"])
    assert client.get("/api/concepts", params={"order": -1}).json()["parameter"] == "order"


def test_concepts_answers_are_explained_and_linked_to_served_pages(client):
    from app.routers.concepts import bank

    topics = " ".join(q["topic"] + " " + q["question"] for q in bank()).lower()
    for concept in ("clm", "15 %", "80/10/10", "[cls]", "per-token", "roberta", "span", "whole-word", "xlnet", "electra"):
        assert concept in topics, concept
    for q in bank():
        right = client.post(f"/api/concepts/{q['id']}/answer", json={"choice": q["answer"]}).json()
        wrong = client.post(f"/api/concepts/{q['id']}/answer", json={"choice": (q["answer"] + 1) % len(q["choices"])}).json()
        assert right["correct"] and not wrong["correct"] and wrong["answer"] == q["answer"]
        assert right["why"] is None and wrong["why"] == q["choices"][(q["answer"] + 1) % len(q["choices"])]["why"]
        assert len(right["explanation"]) > 40
        page, _, anchor = right["applet"].partition("#")
        served = client.get(page)
        assert served.status_code == 200 and (not anchor or f'id="{anchor}"' in served.text), right["applet"]
    r = client.post("/api/concepts/nope/answer", json={"choice": 0})
    assert r.status_code == 404 and r.json()["parameter"] == "id"
    r = client.post(f"/api/concepts/{bank()[0]['id']}/answer", json={"choice": 9})
    assert r.status_code == 422 and r.json()["parameter"] == "choice"


@pytest.mark.parametrize("path", ["/compare", "/objectives", "/concepts", "/attention"])
def test_lesson_pages_serve_get_and_head(client, path):
    r = client.get(path)
    assert r.status_code == 200 and re.search(r'data-page="\w+"', r.text)
    assert client.head(path).status_code == 200
