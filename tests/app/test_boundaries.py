"""Boundary table: every parameter of every API endpoint at min - epsilon, min, max, max + epsilon,
NaN, +/-infinity, a wrong type, missing; plus an unknown extra field per endpoint.

Out-of-range rows get the documented 4xx with {"detail": <sentence naming the parameter>,
"parameter": <its name>}; in-range rows succeed; nothing is a 5xx and no error body shows a
traceback or a file path. Extra fields are rejected (422 naming the field; `extra="forbid"`),
in JSON bodies and in the stream's query alike. Limits that depend on the models (vocabulary
size, contexts, quiz bank) are read from the tiny models the suite trains.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Callable

import pytest

from app.config import REPO
from app.schemas import MAX_MASKS, MAX_NEW_TOKENS, MAX_PROMPT_CHARS, MAX_SEED

MISSING = object()
OK = 200
NaN, INF = math.nan, math.inf


@dataclass
class Limits:
    vocab: int
    bert_context: int
    quiz_count: int


Value = Callable[[Limits], Any]

# endpoint: (method, path, a valid request; the rows change one parameter of it)
ENDPOINTS = {
    "next-token": ("POST", "/api/next-token", {"prompt": "the king"}),
    "generate": ("POST", "/api/generate", {"prompt": "the king", "max_new_tokens": 3}),
    "stream-get": ("GET", "/api/generate/stream", {"prompt": "the king", "max_new_tokens": 3}),
    "stream-post": ("POST", "/api/generate/stream", {"prompt": "the king", "max_new_tokens": 3}),
    "mask-fill": ("POST", "/api/mask-fill", {"text": "the king", "positions": [1]}),
    "corrupt": ("POST", "/api/mask-fill/corrupt", {"text": "the king"}),
    "nsp": ("POST", "/api/nsp/predict", {"a": "the king", "b": "the crown"}),
    "quiz": ("GET", "/api/nsp/quiz", {}),
    "answer": ("POST", "/api/nsp/quiz/q000/answer", {"guess": "IsNext"}),
}
SAMPLING = ("next-token", "generate", "stream-get", "stream-post")
GENERATING = ("generate", "stream-get", "stream-post")


def rows_int(endpoints, name: str, lo: Value, hi: Value, default_ok: bool = True):
    for ep in endpoints:
        query = ENDPOINTS[ep][0] == "GET"
        yield ep, name, "min-1", lambda L: lo(L) - 1, 422
        yield ep, name, "min", lo, OK
        yield ep, name, "max", hi, OK
        yield ep, name, "max+1", lambda L: hi(L) + 1, 422
        yield ep, name, "fraction", lambda L: lo(L) + 0.5, 422
        yield ep, name, "NaN", lambda L, q=query: "nan" if q else NaN, 422
        yield ep, name, "+inf", lambda L, q=query: "inf" if q else INF, 422
        yield ep, name, "-inf", lambda L, q=query: "-inf" if q else -INF, 422
        yield ep, name, "wrong type", lambda L, q=query: "abc" if q else "1", 422
        if not query:
            yield ep, name, "boolean", lambda L: True, 422
        yield ep, name, "missing", lambda L: MISSING, OK if default_ok else 422


def rows_float(endpoints, name: str, lo: float, hi: float, lo_open: bool):
    eps = 1e-9
    for ep in endpoints:
        query = ENDPOINTS[ep][0] == "GET"
        if lo_open:
            yield ep, name, "min (excluded)", lambda L: lo, 422
            yield ep, name, "min+eps", lambda L: lo + eps, OK
        else:
            yield ep, name, "min-eps", lambda L: lo - eps, 422
            yield ep, name, "min", lambda L: lo, OK
        yield ep, name, "max", lambda L: hi, OK
        yield ep, name, "max+eps", lambda L: hi + eps, 422
        yield ep, name, "NaN", lambda L, q=query: "nan" if q else NaN, 422
        yield ep, name, "+inf", lambda L, q=query: "inf" if q else INF, 422
        yield ep, name, "-inf", lambda L, q=query: "-inf" if q else -INF, 422
        yield ep, name, "wrong type", lambda L, q=query: "abc" if q else "0.5", 422
        yield ep, name, "missing", lambda L: MISSING, OK


def rows_text(endpoints, name: str, hi: Value, fill: str = "a"):
    for ep in endpoints:
        query = ENDPOINTS[ep][0] == "GET"
        yield ep, name, "min-1 (empty)", lambda L: "", 422
        yield ep, name, "min", lambda L: fill, OK
        yield ep, name, "max", lambda L: fill * hi(L), OK
        yield ep, name, "max+1", lambda L: fill * (hi(L) + 1), 422
        if not query:  # in a query everything is text
            yield ep, name, "NaN", lambda L: NaN, 422
            yield ep, name, "+inf", lambda L: INF, 422
            yield ep, name, "wrong type", lambda L: 123, 422
            yield ep, name, "null", lambda L: None, 422
        yield ep, name, "missing", lambda L: MISSING, 422


ROWS = [
    *rows_text(SAMPLING, "prompt", lambda L: MAX_PROMPT_CHARS),
    *rows_float(SAMPLING, "temperature", 0.0, 5.0, lo_open=False),
    *rows_int(SAMPLING, "top_k", lambda L: 0, lambda L: L.vocab),
    *rows_float(SAMPLING, "top_p", 0.0, 1.0, lo_open=True),
    *rows_int(GENERATING, "max_new_tokens", lambda L: 1, lambda L: MAX_NEW_TOKENS),
    *rows_int(GENERATING, "seed", lambda L: 0, lambda L: MAX_SEED),
    *rows_text(["mask-fill"], "text", lambda L: L.bert_context - 2),
    *rows_int(["mask-fill"], "top_k", lambda L: 1, lambda L: L.vocab),
    *rows_text(["corrupt"], "text", lambda L: L.bert_context - 2),
    *rows_float(["corrupt"], "mask_rate", 0.0, 1.0, lo_open=True),
    *rows_int(["corrupt"], "seed", lambda L: 0, lambda L: MAX_SEED),
    *rows_text(["nsp"], "a", lambda L: L.bert_context - 4),  # b is 1+ characters: len(a)+len(b)+3 <= context
    *rows_text(["nsp"], "b", lambda L: L.bert_context - 4),
    *rows_int(["quiz"], "index", lambda L: 0, lambda L: L.quiz_count - 1),
    # positions: indices into the text, distinct, 1 to MAX_MASKS of them
    ("mask-fill", "positions", "min-1", lambda L: [-1], 422),
    ("mask-fill", "positions", "min", lambda L: [0], OK),
    ("mask-fill", "positions", "max", lambda L: [len("the king") - 1], OK),
    ("mask-fill", "positions", "max+1", lambda L: [len("the king")], 422),
    ("mask-fill", "positions", "empty", lambda L: [], 422),
    ("mask-fill", "positions", "repeated", lambda L: [1, 1], 422),
    ("mask-fill", "positions", "NaN", lambda L: [NaN], 422),
    ("mask-fill", "positions", "+inf", lambda L: [INF], 422),
    ("mask-fill", "positions", "wrong type", lambda L: "1", 422),
    ("mask-fill", "positions", "boolean item", lambda L: [False], 422),
    ("mask-fill", "positions", "as well as a [MASK] marker", lambda L: [0], 422),
    ("answer", "guess", "IsNext", lambda L: "IsNext", OK),
    ("answer", "guess", "NotNext", lambda L: "NotNext", OK),
    ("answer", "guess", "other word", lambda L: "isnext", 422),
    ("answer", "guess", "NaN", lambda L: NaN, 422),
    ("answer", "guess", "wrong type", lambda L: 1, 422),
    ("answer", "guess", "missing", lambda L: MISSING, 422),
]


def row_id(row) -> str:
    return f"{row[0]}.{row[1]}.{row[2]}"


@pytest.fixture(scope="module")
def limits(models) -> Limits:
    return Limits(vocab=models.vocab.size, bert_context=models.bert.context, quiz_count=len(models.quiz))


def send(client, endpoint: str, params: dict):
    method, path, _ = ENDPOINTS[endpoint]
    if method == "GET":
        return client.get(path, params=params)
    # json.dumps writes NaN / Infinity literals, as a careless client would
    return client.post(path, content=json.dumps(params), headers={"content-type": "application/json"})


def assert_clean_error(response, status: int, parameter: str | None) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"detail", "parameter"} and isinstance(body["detail"], str) and body["detail"]
    assert body["parameter"] == parameter, body
    if parameter is not None:
        assert parameter in body["detail"], body
    for leak in ("Traceback", 'File "', ".py", str(REPO), "site-packages"):
        assert leak not in response.text, response.text


def assert_success(response) -> None:
    assert response.status_code == 200, response.text
    if response.headers["content-type"].startswith("text/event-stream"):
        assert "event: done" in response.text
    else:
        assert "detail" not in response.json()


@pytest.mark.parametrize("endpoint, parameter, case, value, expected", ROWS, ids=[row_id(r) for r in ROWS])
def test_boundary(client, limits, endpoint, parameter, case, value, expected):
    params = dict(ENDPOINTS[endpoint][2])
    v = value(limits)
    if v is MISSING:
        params.pop(parameter, None)
    else:
        params[parameter] = v
    if parameter == "b":
        params["a"] = "a"
    if parameter == "a":
        params["b"] = "b"
    if endpoint == "mask-fill" and parameter == "text" and isinstance(v, str):
        params["positions"] = [0] if v else None
    if case == "as well as a [MASK] marker":
        params["text"] = "the [MASK]ing"
    if endpoint == "mask-fill" and parameter == "positions" and case == "missing":
        params["text"] = "the [MASK]ing"  # no positions: then the text needs a marker
    response = send(client, endpoint, params)
    if expected == OK:
        assert_success(response)
    else:
        assert_clean_error(response, expected, parameter)


def test_positions_count_limit(client):
    text = "a" * 40
    assert client.post("/api/mask-fill", json={"text": text, "positions": list(range(MAX_MASKS))}).status_code == 200
    r = client.post("/api/mask-fill", json={"text": text, "positions": list(range(MAX_MASKS + 1))})
    assert_clean_error(r, 422, "positions")
    markers = "[MASK]" * (MAX_MASKS + 1)
    assert_clean_error(client.post("/api/mask-fill", json={"text": markers}), 422, "text")


def test_pair_length_is_checked_together(client, limits):
    room = limits.bert_context - 3
    assert client.post("/api/nsp/predict", json={"a": "a" * (room - 5), "b": "b" * 5}).status_code == 200
    r = client.post("/api/nsp/predict", json={"a": "a" * (room - 5), "b": "b" * 6})
    assert_clean_error(r, 422, "b")


@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
def test_unknown_extra_field_is_rejected_by_name(client, endpoint):
    params = {**ENDPOINTS[endpoint][2], "temprature": 0.5}
    assert_clean_error(send(client, endpoint, params), 422, "temprature")


@pytest.mark.parametrize("endpoint", [e for e in ENDPOINTS if ENDPOINTS[e][0] == "POST"])
def test_malformed_and_non_object_bodies(client, endpoint):
    path = ENDPOINTS[endpoint][1]
    headers = {"content-type": "application/json"}
    assert_clean_error(client.post(path, content=b'{"prompt": ', headers=headers), 400, None)
    for raw in (b"[]", b"null", b"NaN", b'"text"'):
        assert_clean_error(client.post(path, content=raw, headers=headers), 422, None)
    assert_clean_error(client.post(path, content=b"", headers=headers), 422, None)


def test_integral_numbers_are_integers(client):
    """JSON has one number type: 3.0 is the integer 3 (JSON Schema agrees); 3.5 is not."""
    r = client.post("/api/generate", json={"prompt": "the king", "max_new_tokens": 3.0, "seed": 7.0})
    assert r.status_code == 200 and len(r.json()["steps"]) == 3
    same = client.post("/api/generate", json={"prompt": "the king", "max_new_tokens": 3, "seed": 7}).json()
    assert r.json()["text"] == same["text"]


def test_lone_surrogate_and_unknown_quiz_id(client):
    raw = b'{"prompt": "\\ud800"}'
    r = client.post("/api/next-token", content=raw, headers={"content-type": "application/json"})
    assert_clean_error(r, 422, "prompt")
    assert_clean_error(client.post("/api/nsp/quiz/nope/answer", json={"guess": "IsNext"}), 404, "id")


def test_tiny_temperature_tends_to_greedy_not_nan(client):
    body = client.post("/api/next-token", json={"prompt": "the king", "temperature": 5e-324, "top_p": 5e-324}).json()
    assert all(isinstance(p, float) and math.isfinite(p) for p in body["tempered"] + body["final"])
    assert max(body["final"]) == 1.0
    steps = client.post("/api/generate", json={"prompt": "the king", "temperature": 1e-300, "max_new_tokens": 5}).json()
    assert all(math.isfinite(s["prob"]) for s in steps["steps"])
