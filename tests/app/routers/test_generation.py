"""app/routers/generation.py: /api/next-token, /api/generate and the SSE stream."""
from __future__ import annotations

import asyncio
import threading
import time

import httpx
import numpy as np
import pytest
import uvicorn

from app.config import Settings
from app.contract import FIRST_CHAR
from app.sampling import softmax
from app.main import create_app
from app.routers.generation import event_stream

PROMPT = "SPEAKER1.\nLine 3 speaks of"


def test_next_token_is_the_gpt_distribution(client, models):
    body = client.post("/api/next-token", json={"prompt": PROMPT}).json()
    ids, _ = models.vocab.encode(PROMPT)
    logits = models.gpt.logits(ids)[-1, FIRST_CHAR:]
    assert body["chars"] == models.vocab.chars
    np.testing.assert_allclose(body["raw"], softmax(logits), rtol=1e-5)
    np.testing.assert_allclose(body["tempered"], body["raw"], rtol=1e-12)
    np.testing.assert_allclose(body["final"], body["raw"], rtol=1e-12)
    assert all(body["kept"])
    assert body["greedy"] is False and body["context_used"] == len(PROMPT)
    assert body["entropy"]["raw"] == pytest.approx(-(softmax(logits) * np.log(softmax(logits))).sum(), rel=1e-5)


def test_next_token_knobs(client):
    greedy = client.post("/api/next-token", json={"prompt": PROMPT, "temperature": 0}).json()
    assert greedy["greedy"] and sum(greedy["kept"]) == 1
    assert np.argmax(greedy["final"]) == np.argmax(greedy["raw"]) and max(greedy["final"]) == 1.0
    k = client.post("/api/next-token", json={"prompt": PROMPT, "temperature": 2.0, "top_k": 7}).json()
    assert sum(p > 0 for p in k["final"]) == 7 == sum(k["kept"])
    assert k["entropy"]["tempered"] > k["entropy"]["raw"] > 0
    p = client.post("/api/next-token", json={"prompt": PROMPT, "top_p": 0.5}).json()
    kept = sorted((t for t, keep in zip(p["tempered"], p["kept"]) if keep), reverse=True)
    assert sum(kept) >= 0.5 > sum(kept[:-1])


def test_long_prompt_uses_the_last_context_chars_and_reports_unknowns(client):
    long = "é" + "a" * 99 + PROMPT
    body = client.post("/api/next-token", json={"prompt": long}).json()
    assert body["context_used"] == 64
    assert body["unknown_chars"] == [{"position": 0, "char": "é", "segment": None}]
    tail = client.post("/api/next-token", json={"prompt": long[-64:]}).json()
    np.testing.assert_allclose(body["raw"], tail["raw"], rtol=1e-6)


def test_generate_is_reproducible_per_seed(client, models):
    req = {"prompt": PROMPT, "max_new_tokens": 80, "temperature": 1.0}
    a = client.post("/api/generate", json={**req, "seed": 1}).json()
    assert a == client.post("/api/generate", json={**req, "seed": 1}).json()
    others = {client.post("/api/generate", json={**req, "seed": s}).json()["text"] for s in range(2, 6)}
    assert len(others | {a["text"]}) > 1
    assert len(a["text"]) == 80 == len(a["steps"])
    assert set(a["text"]) <= set(models.vocab.chars)
    for step, ch in zip(a["steps"], a["text"]):
        assert step["char"] == ch and 0 < step["prob"] <= 1
        probs = [t["prob"] for t in step["top"]]
        assert 1 <= len(probs) <= 5 and probs == sorted(probs, reverse=True) and step["prob"] <= probs[0]


def test_greedy_generation_is_the_argmax_chain(client, models):
    body = client.post("/api/generate", json={"prompt": PROMPT, "max_new_tokens": 90, "temperature": 0, "seed": 9}).json()
    # The same rule recomputed without a cache: full forwards of the visible window, which
    # restarts from its last 32 characters whenever it would exceed the context of 64.
    window, _ = models.vocab.encode(PROMPT)
    text = ""
    for _ in range(90):
        logits = models.gpt.logits(window)[-1]
        nxt = FIRST_CHAR + int(np.argmax(logits[FIRST_CHAR:]))
        text += models.vocab.token(nxt)
        window = window + [nxt]
        if len(window) > 64:
            window = window[-32:]
    assert body["text"] == text
    assert all(s["prob"] == 1.0 and s["top"] == [{"char": s["char"], "prob": 1.0}] for s in body["steps"])


def test_top_k_one_equals_greedy(client):
    req = {"prompt": PROMPT, "max_new_tokens": 40}
    assert (client.post("/api/generate", json={**req, "top_k": 1, "seed": 3}).json()["text"]
            == client.post("/api/generate", json={**req, "temperature": 0}).json()["text"])


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_stream_concatenates_to_the_generated_text(client, parse_sse, method):
    req = {"prompt": PROMPT, "max_new_tokens": 300, "temperature": 0.8, "top_p": 0.9, "seed": 4}
    expected = client.post("/api/generate", json=req).json()
    kw = {"params": req} if method == "GET" else {"json": req}
    r = client.request(method, "/api/generate/stream", **kw)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(r.text)
    tokens = [d for e, d in events if e == "token"]
    assert [e for e, _ in events] == ["token"] * len(tokens) + ["done"]
    assert "".join(d["text"] for d in tokens) == expected["text"] == events[-1][1]["text"]
    assert [s for d in tokens for s in d["steps"]] == expected["steps"]
    assert all(d["text"] == "".join(s["char"] for s in d["steps"]) for d in tokens)
    assert len(tokens) < 300  # several characters per event
    assert events[-1][1]["context_used"] == len(PROMPT)


@pytest.mark.parametrize("body,parameter", [
    ({"prompt": ""}, "prompt"),
    ({"prompt": "x" * 10_001}, "prompt"),
    ({"temperature": 1.0}, "prompt"),
    ({"prompt": "a", "temperature": -0.1}, "temperature"),
    ({"prompt": "a", "temperature": 5.01}, "temperature"),
    ({"prompt": "a", "top_k": -1}, "top_k"),
    ({"prompt": "a", "top_k": 47}, "top_k"),
    ({"prompt": "a", "top_p": 0}, "top_p"),
    ({"prompt": "a", "top_p": 1.01}, "top_p"),
    ({"prompt": "a", "max_new_tokens": 0}, "max_new_tokens"),
    ({"prompt": "a", "max_new_tokens": 1001}, "max_new_tokens"),
    ({"prompt": "a", "seed": -3}, "seed"),
    ({"prompt": "a", "seed": "abc"}, "seed"),
])
@pytest.mark.parametrize("url", ["/api/generate", "/api/generate/stream", "GET /api/generate/stream"])
def test_bad_sampling_input(client, body, parameter, url):
    if url.startswith("GET"):
        r = client.get(url.split()[1], params=body)
    else:
        r = client.post(url, json=body)
    assert r.status_code == 422, r.text
    assert r.json()["parameter"] == parameter and parameter in r.json()["detail"]


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("field", ["temperature", "top_p"])
def test_non_finite_sampling_numbers(client, literal, field):
    raw = f'{{"prompt": "a", "{field}": {literal}}}'.encode()
    r = client.post("/api/next-token", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["parameter"] == field
    assert client.get("/api/generate/stream", params={"prompt": "a", field: literal.lower()}).status_code == 422


class FakeRequest:
    """Just enough of a Request for event_stream: disconnects after `after` checks."""

    def __init__(self, app, after):
        self.app, self.after, self.checks = app, after, 0

    async def is_disconnected(self):
        self.checks += 1
        return self.checks > self.after


def test_stream_stops_generating_when_the_client_disconnects(client, models):
    produced = []
    closed = []

    def sampler():
        try:
            for step in models.gpt.generate(models.vocab.encode(PROMPT)[0], 1000, 1.0, 0, 1.0, 0):
                produced.append(step)
                yield step
        finally:
            closed.append(True)

    async def consume():
        events = []
        async for chunk in event_stream(FakeRequest(client.app, after=1), models.vocab, sampler(), 10, []):
            events.append(chunk)
        return events

    settings = client.app.state.settings
    events = asyncio.run(consume())
    assert len(events) == 2 and all(e.event == "token" for e in events)  # no done event
    assert len(produced) <= 2 * settings.stream_flush_chars < 1000
    assert closed == [True] and client.app.state.active_streams == 0


def test_a_failure_midway_ends_the_stream_with_an_error_event(client, models, parse_sse):
    def sampler():
        yield from models.gpt.generate(models.vocab.encode(PROMPT)[0], 3, 1.0, 0, 1.0, 0)
        raise RuntimeError("onnxruntime exploded at /secret/path")

    async def consume():
        return [c async for c in event_stream(FakeRequest(client.app, after=100), models.vocab, sampler(), 10, [])]

    events = parse_sse("".join(f"event: {e.event}\ndata: {e.raw_data}\n\n" for e in asyncio.run(consume())))
    assert [e for e, _ in events][-1] == "error"
    assert "secret" not in events[-1][1]["detail"]
    assert "".join(d["text"] for e, d in events if e == "token") and client.app.state.active_streams == 0


def test_live_server_stops_a_stream_after_disconnect(tiny_models_dir):
    """Through uvicorn: close the connection after the first event; the sampler must stop."""
    app = create_app(Settings(models_dir=tiny_models_dir, stream_flush_chars=4))
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if server.started:
                break
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        session = app.state.registry.default.gpt.session
        calls = []

        class Slow:  # 2 ms per character: 1000 characters would take 2 s
            def io_binding(self):
                return session.io_binding()

            def run_with_iobinding(self, binding):  # every cached step
                calls.append(1)
                time.sleep(0.002)
                return session.run_with_iobinding(binding)

        app.state.registry.default.gpt.session = Slow()
        with httpx.stream("GET", f"http://127.0.0.1:{port}/api/generate/stream",
                          params={"prompt": PROMPT, "max_new_tokens": 1000}, timeout=10) as r:
            for line in r.iter_lines():
                if line.startswith("data:"):
                    break
        deadline = time.time() + 3
        while app.state.active_streams and time.time() < deadline:
            time.sleep(0.02)
        assert app.state.active_streams == 0
        after = len(calls)
        time.sleep(0.3)
        assert len(calls) == after < 500
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.mark.parametrize("prompt_len, n, knobs", [(5, 40, {}), (50, 100, {"temperature": 1.3, "top_k": 12}),
                                                   (200, 30, {"top_p": 0.9})])
def test_stepping_draws_the_same_characters_as_generate(client, models, prompt_len, n, knobs):
    """One random stream: /api/next-token with seed and `generated` samples what /api/generate
    samples, character by character, also across the window restart (tiny GPT context 64)."""
    chars = [c for c in models.vocab.chars if c.isalpha()]
    prompt = "".join(chars[i % len(chars)] for i in range(prompt_len))
    body = {"prompt": prompt, "seed": 11, **knobs}
    whole = client.post("/api/generate", json={**body, "max_new_tokens": n}).json()["text"]
    out = ""
    for i in range(n):
        r = client.post("/api/next-token", json={**body, "prompt": prompt + out, "generated": i})
        assert r.status_code == 200, r.text
        out += r.json()["sample"]["char"]
    assert out == whole


def test_next_token_sample_is_absent_without_seed_and_generated_is_checked(client):
    assert client.post("/api/next-token", json={"prompt": "ab"}).json()["sample"] is None
    r = client.post("/api/next-token", json={"prompt": "ab", "seed": 1, "generated": 2})
    assert r.status_code == 422 and r.json()["parameter"] == "generated"
