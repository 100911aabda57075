"""The browser engine (static/lib/engine.js) against the server, without a browser: node runs the
engine's own modules with the vendored onnxruntime-web WebAssembly on a set's web copies
(tests/app/engine_parity.mjs), the app answers the same bodies in-process. Same texts, the same
refusals, probabilities within 1e-4; on the tiny set (GPT's context of 64: 150 characters cross
the window restart) and on the shipped set. The same comparison runs in Chromium in
tests/browser/test_engine.py."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import REPO, Settings
from app.main import create_app

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")
TOLERANCE = 1e-4

CASES = [
    ["/api/generate", {"prompt": "To be, or not to be, ", "max_new_tokens": 150, "seed": 0}],
    ["/api/generate", {"prompt": "the king ", "max_new_tokens": 150, "seed": 7, "temperature": 0.8, "top_k": 20, "top_p": 0.9}],
    ["/api/generate", {"prompt": "SPEAKER1.\n", "max_new_tokens": 150, "temperature": 0}],
    ["/api/generate", {"prompt": "Line 3 speaks of love in the garden, again! " * 3, "max_new_tokens": 120,
                       "seed": 4294967295, "temperature": 1.4, "top_p": 0.5}],
    ["/api/generate", {"prompt": "caf\u00e9 \U0001F600 ", "max_new_tokens": 20, "seed": 3, "top_k": 1}],
    ["/api/next-token", {"prompt": "To be, or not to be, that", "generated": 4, "seed": 3, "top_p": 0.5}],
    ["/api/next-token", {"prompt": "the sea " * 12, "generated": 60, "seed": 11, "temperature": 0.5, "top_k": 5}],
    ["/api/next-token", {"prompt": "a ship", "temperature": 0}],
    ["/api/mask-fill", {"text": "To be, or not to [MASK]e, that is the qu[MASK]stion"}],
    ["/api/mask-fill", {"text": "Line 12 speaks of war and the sword", "positions": [0, 5, 12, 30], "top_k": 5}],
    ["/api/mask-fill", {"text": "caf\u00e9 \U0001F600 [MASK]ing", "top_k": 3}],
    ["/api/generate", {"prompt": "x", "top_k": 999}],
    ["/api/generate", {"prompt": ""}],
    ["/api/next-token", {"prompt": "ab", "generated": 2}],
    ["/api/mask-fill", {"text": "no marker here"}],
    ["/api/mask-fill", {"text": "two [MASK] markers", "positions": [1]}],
    ["/api/mask-fill", {"text": "abc", "positions": [1, 1]}],
    ["/api/mask-fill", {"text": "abc", "positions": [5]}],
    ["/api/mask-fill", {"text": "x" * 300 + "[MASK]"}],
]
LESSONS = [  # on the device in lib/engine_lessons.js; GPT vs BERT: 3 answers, then 3 refusals
    ["/api/compare", {"text": "To be, or not to be, that is the question", "position": 10}],
    ["/api/compare", {"text": "caf\u00e9 \U0001F600 the sea", "position": 0, "top_k": 3}],
    ["/api/compare", {"text": "the king is dead", "position": 15, "strip": False}],
    ["/api/compare", {"text": "abc", "position": 3}],
    ["/api/compare", {"text": "x" * 65, "position": 1}],
    ["/api/compare", {"text": "abc", "position": 1, "top_k": 0}],
    # BERT's next-sentence head (the static copy's NSP quiz): 2 answers, then 1 refusal
    ["/api/nsp/predict", {"a": "To be, or not to be,", "b": "that is the question:"}],
    ["/api/nsp/predict", {"a": "caf\u00e9 \U0001F600", "b": "the king is dead."}],
    ["/api/nsp/predict", {"a": "x" * 200, "b": "y"}],
    # ELECTRA's discriminator (the shipped set has one; the tiny set refuses naming `model`, as the server does)
    ["/api/objectives/electra", {"text": "To be, or nat to be, that is the quistion"}],
    ["/api/objectives/electra", {"text": "To be, or not to be, that is the question", "positions": [3, 9, 9, 20, 33], "seed": 5}],
    ["/api/objectives/electra", {"text": "abc", "positions": [3]}],
]
ATTENTION = [  # the attention page's inspection graphs (lib/engine_attention.js): 4 answers, then 4 refusals
    ["/api/attention", {"text": "to be or not", "pad": 2}],
    ["/api/attention", {"text": "caf\u00e9 \U0001F600 the sea!", "pad": 0, "layer": 1, "head": 1}],
    ["/api/attention", {"text": "ab", "pad": 8, "layer": 0}],
    ["/api/attention", {"text": "To be, or not to be, that is the question: whe", "head": 0}],
    ["/api/attention", {"text": ""}],
    ["/api/attention", {"text": "x" * 49}],
    ["/api/attention", {"text": "abc", "pad": 9}],
    ["/api/attention", {"text": "abc", "layer": 63}],
]


def close(a: float, b: float) -> bool:
    return abs(a - b) <= TOLERANCE


def assert_same(route: str, server: dict, engine: dict) -> None:
    assert engine["status"] == server["status"], (route, server, engine)
    s, e = server["json"], engine["json"]
    if server["status"] != 200:
        assert e["parameter"] == s["parameter"], (route, s, e)
        return
    assert e["unknown_chars"] == s["unknown_chars"]
    if route == "/api/generate":
        assert e["text"] == s["text"]
        assert e["context_used"] == s["context_used"]
        for se, ee in zip(s["steps"], e["steps"]):
            assert se["char"] == ee["char"] and close(se["prob"], ee["prob"])
            tops = {t["char"]: t["prob"] for t in ee["top"]}
            assert all(close(t["prob"], tops.get(t["char"], -1)) for t in se["top"] if t["prob"] > 2 * TOLERANCE)
    elif route == "/api/next-token":
        assert e["sample"] == s["sample"] or (e["sample"]["char"] == s["sample"]["char"]
                                              and close(e["sample"]["prob"], s["sample"]["prob"]))
        assert e["kept"] == s["kept"] and e["greedy"] == s["greedy"] and e["context_used"] == s["context_used"]
        for key in ("raw", "tempered", "final"):
            assert max(abs(x - y) for x, y in zip(s[key], e[key])) <= TOLERANCE
            assert close(s["entropy"][key], e["entropy"][key])
    elif route == "/api/compare":
        assert_same_compare(s, e)
    elif route == "/api/objectives/electra":
        assert [(c["char"], c["filled"], c["replaced"]) for c in e["chars"]] == [(c["char"], c["filled"], c["replaced"]) for c in s["chars"]]
        assert all(close(a["p_replaced"], b["p_replaced"]) for a, b in zip(s["chars"], e["chars"], strict=True))
        assert (e["flagged"], e["correct"], e["replaced"]) == (s["flagged"], s["correct"], s["replaced"])
    elif route == "/api/attention":
        assert_same_attention(s, e)
    elif route == "/api/nsp/predict":
        assert e["prediction"] == s["prediction"] and close(e["p_is_next"], s["p_is_next"])
    else:
        assert e["tokens"] == s["tokens"]
        for sm, em in zip(s["masks"], e["masks"], strict=True):
            assert sm["position"] == em["position"]
            assert [p["char"] for p in sm["predictions"]] == [p["char"] for p in em["predictions"]]
            assert all(close(p["prob"], q["prob"]) for p, q in zip(sm["predictions"], em["predictions"]))
            assert (sm["original"] is None) == (em["original"] is None)
            if sm["original"]:
                assert sm["original"]["rank"] == em["original"]["rank"] and close(sm["original"]["prob"], em["original"]["prob"])


def assert_same_guess(s: dict, e: dict) -> None:
    assert s["available"] == e["available"] and s["rank"] == e["rank"] and s["reads"] == e["reads"]
    assert [t["char"] for t in s["top"]] == [t["char"] for t in e["top"]]
    assert all(close(t["prob"], u["prob"]) for t, u in zip(s["top"], e["top"]))
    for key in ("p_true", "entropy"):
        assert (s[key] is None) == (e[key] is None) and (s[key] is None or close(s[key], e[key]))


def assert_same_compare(s: dict, e: dict) -> None:
    assert e["tokens"] == s["tokens"] and e["char"] == s["char"] and e["position"] == s["position"]
    assert_same_guess(s["gpt"], e["gpt"])
    assert_same_guess(s["bert"], e["bert"])
    assert (s["strip"] is None) == (e["strip"] is None)
    for a, b in zip(s["strip"] or [], e["strip"] or [], strict=True):
        assert a["char"] == b["char"] and (a["gpt"] is None) == (b["gpt"] is None)
        assert (a["gpt"] is None or close(a["gpt"], b["gpt"])) and close(a["bert"], b["bert"])


def assert_same_attention(s: dict, e: dict) -> None:
    """The same grids (4 decimals: a weight within 1e-7 of a rounding edge may land one step over) and
    checks; the inspection graph's logits difference to the served graph is the one measured when the
    set was exported (the device does not download the served graphs to measure it again)."""
    families = [k for k in s if k != "unknown_chars"]
    assert set(families) == {k for k in e if k != "unknown_chars"}
    for family in families:
        a, b = s[family], e[family]
        if a is None:  # a family the set has no inspection graph of (T5, PLM): null on both
            assert b is None, family
            continue
        assert {k: a[k] for k in ("tokens", "n_layer", "n_head", "layer", "head")} == \
               {k: b[k] for k in ("tokens", "n_layer", "n_head", "layer", "head")}
        cells = [(x, y) for ra, rb in zip(a["weights"], b["weights"], strict=True) for x, y in zip(ra, rb, strict=True)]
        assert max(abs(x - y) for x, y in cells) <= 1.0001e-4
        assert sum(x != y for x, y in cells) <= max(2, len(cells) // 100), "more than 1 % of the cells rounded apart"
        assert abs(a["row_sum_max_error"] - b["row_sum_max_error"]) <= 1e-5 and b["row_sum_max_error"] <= 1e-5
        assert abs(a["blocked_max"] - b["blocked_max"]) <= 1e-5
        assert 0 <= b["served_logits_max_abs_diff"] <= 1e-3 and abs(a["served_logits_max_abs_diff"] - b["served_logits_max_abs_diff"]) <= 1e-4


def run_engine(set_dir: Path, cases: list, tmp_path: Path) -> list[dict]:
    (tmp_path / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
    subprocess.run(["nice", "-n", "10", NODE, str(REPO / "tests" / "app" / "engine_parity.mjs"), str(REPO / "static"),
                    str(set_dir), str(tmp_path / "cases.json"), str(tmp_path / "out.json")], check=True, timeout=300)
    return json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))


def run_server(set_dir: Path, cases: list, tmp_path: Path) -> list[dict]:
    settings = Settings(models_dir=set_dir, data_dir=tmp_path / "data", instructor_token="t" * 32)
    with TestClient(create_app(settings), base_url="http://localhost") as client:
        return [{"status": r.status_code, "json": r.json()} for r in (client.post(path, json=body) for path, body in cases)]


def check_set(set_dir: Path, tmp_path: Path) -> None:
    cases = CASES + LESSONS + ATTENTION
    server, engine = run_server(set_dir, cases, tmp_path), run_engine(set_dir, cases, tmp_path)
    electra = [200, 200, 422] if (set_dir / "electra.onnx").is_file() else [409, 409, 409]
    assert [r["status"] for r in server] == ([200] * 11 + [422] * 8 + [200] * 3 + [422] * 3 + [200] * 2 + [422] + electra
                                             + [200] * 4 + [422] * 4)
    for (route, _), s, e in zip(cases, server, engine, strict=True):
        assert_same(route, s, e)


def test_engine_matches_the_server_on_the_tiny_set(tiny_models_dir, tmp_path):
    assert (tiny_models_dir / "web" / "manifest.json").is_file(), "the model-set writer writes web copies"
    check_set(tiny_models_dir, tmp_path)


def shipped_web_set(tmp_path: Path) -> Path:
    """models/ when it has its web copies; else a copy of its GPT and BERT with theirs written."""
    shipped = REPO / "models"
    if (shipped / "web" / "manifest.json").is_file():
        return shipped
    from training.export.web import write_web_copies  # before `python -m training web-copies models`

    copy = tmp_path / "shipped"
    copy.mkdir()
    for name in ("gpt.onnx", "bert.onnx", "gpt.card.json", "bert.card.json", "vocab.json", "set.json"):
        shutil.copy(shipped / name, copy / name)
    write_web_copies(copy)
    return copy


def test_engine_matches_the_server_on_the_shipped_set(tmp_path):
    check_set(shipped_web_set(tmp_path), tmp_path)


SPANS_AND_FOUR = [  # T5 and PLM from the shipped set's web copies (issue 54): spans written back, their attention
    ["/api/spans", {"text": "To be, or not to be, that is the question", "spans": [[3, 5], [13, 16], [30, 34]]}],
    ["/api/spans", {"text": "caf\u00e9 \U0001F600 ROMEO. O, she doth teach the torches", "spans": [[0, 2], [9, 14], [28, 33]]}],
    ["/api/attention", {"text": "to be or not", "families": ["t5", "plm"], "seed": 3, "layer": 1, "head": 2}],
]


def test_t5_and_plm_web_copies_match_the_server_on_the_shipped_set(tmp_path):
    """The shipped set's T5 and PLM web copies (each family's plain and attention graphs reading one
    weights file) give the server's answers on the device: the same spans, probabilities within 1e-4."""
    folder = shipped_web_set(tmp_path)
    manifest = json.loads((folder / "web" / "manifest.json").read_text(encoding="utf-8"))
    if "t5" not in manifest["models"]:
        pytest.skip("this set's web copies have no T5 (python -m training web-copies models)")
    server, engine = run_server(folder, SPANS_AND_FOUR, tmp_path), run_engine(folder, SPANS_AND_FOUR, tmp_path)
    assert [r["status"] for r in server] == [r["status"] for r in engine] == [200] * 3
    for s, e in zip(server[:2], engine[:2]):
        a, b = s["json"], e["json"]
        assert a["corrupted"] == b["corrupted"] and len(a["spans"]) == len(b["spans"])
        for x, y in zip(a["spans"], b["spans"], strict=True):
            assert [w["char"] for w in x["written"]] == [w["char"] for w in y["written"]]
            assert all(close(v["prob"], w["prob"]) for v, w in zip(x["written"], y["written"]))
    assert sum(len(x["written"]) for r in server[:2] for x in r["json"]["spans"]) > 0  # T5 wrote characters
    assert server[2]["json"]["t5"] and server[2]["json"]["plm"]
    assert_same_attention(server[2]["json"], engine[2]["json"])
