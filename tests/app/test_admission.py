"""Backpressure through a real uvicorn server: the in-flight cap (app/admission.py), streams that
stop when their client leaves, and the body limit on the wire (declared and chunked).

Deterministic: the GPT's onnxruntime session is wrapped so that a test decides when model runs
may proceed; the tests assert statuses and counters, never timings.
"""
from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager

import httpx
import pytest
import uvicorn

from app.admission import AdmissionState, is_inference
from app.config import Settings
from app.main import create_app

PROMPT = "the king and the crown"


@contextmanager
def live(app):
    """Serve `app` on a free 127.0.0.1 port in a thread; yields the base URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started, "server start")
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def wait_for(condition, what: str, limit_s: float = 10.0) -> None:
    """Poll until `condition()` holds (a condition, not a speed requirement)."""
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.01)


class GatedSession:
    """Wraps an onnxruntime session: every run waits until the test opens the gate."""

    def __init__(self, session):
        self.session, self.gate, self.runs = session, threading.Event(), 0

    def run(self, names, feeds):
        if not self.gate.wait(timeout=30):
            raise RuntimeError("gate never opened")
        self.runs += 1
        return self.session.run(names, feeds)

    def io_binding(self):
        return self.session.io_binding()

    def run_with_iobinding(self, binding):  # the sampler's cached steps
        if not self.gate.wait(timeout=30):
            raise RuntimeError("gate never opened")
        self.runs += 1
        return self.session.run_with_iobinding(binding)


@pytest.fixture
def capped(tiny_models_dir):
    app = create_app(Settings(models_dir=tiny_models_dir, max_concurrent_requests=1, max_body_bytes=1000))
    with live(app) as url:
        gated = GatedSession(app.state.registry.default.gpt.session)
        app.state.registry.default.gpt.session = gated
        yield app, url, gated


def test_above_the_cap_inference_gets_503_and_the_rest_still_answers(capped):
    app, url, gated = capped
    admission = app.state.admission
    with httpx.Client(base_url=url, timeout=10) as held, httpx.Client(base_url=url, timeout=10) as other:
        with held.stream("POST", "/api/generate/stream", json={"prompt": PROMPT, "max_new_tokens": 40}) as stream:
            assert stream.status_code == 200  # admitted; its model runs wait at the gate
            wait_for(lambda: admission.in_flight == 1, "the stream to be counted")
            for path, body in [("/api/next-token", {"prompt": PROMPT}), ("/api/generate", {"prompt": PROMPT}),
                               ("/api/mask-fill", {"text": "the [MASK]ing"}), ("/api/nsp/predict", {"a": "a", "b": "b"})]:
                r = other.post(path, json=body)
                assert r.status_code == 503, path
                assert r.headers["retry-after"] == "1"
                assert r.json()["parameter"] is None and "busy" in r.json()["detail"]
            r = other.get("/api/generate/stream", params={"prompt": PROMPT})
            assert r.status_code == 503 and r.headers["content-type"].startswith("application/json")
            # not inference: never refused
            assert other.get("/api/health").status_code == 200
            assert other.get("/api/models").status_code == 200
            assert other.get("/api/nsp/quiz", params={"index": 0}).status_code == 200
            assert other.get("/static/style.css").status_code == 200
            assert other.get("/generate").status_code == 200
            assert admission.rejected == 5 and admission.in_flight == 1
            gated.gate.set()  # the admitted stream runs to its end
            text = stream.read().decode()
        assert text.rstrip().split("\n\n")[-1].startswith("event: done")
        wait_for(lambda: admission.in_flight == 0, "the finished stream to leave")
        assert other.post("/api/next-token", json={"prompt": PROMPT}).status_code == 200
        assert admission.peak == 1


def test_a_dropped_stream_frees_its_slot_and_stops_generating(capped):
    app, url, gated = capped
    admission = app.state.admission
    with httpx.Client(base_url=url, timeout=10) as client:
        with client.stream("GET", "/api/generate/stream", params={"prompt": PROMPT, "max_new_tokens": 1000}) as r:
            assert r.status_code == 200
            gated.gate.set()
            for line in r.iter_lines():
                if line.startswith("data:"):
                    break  # one event, then the client leaves
        wait_for(lambda: admission.in_flight == 0, "the dropped stream to be uncounted")
        wait_for(lambda: app.state.active_streams == 0, "the generator to close")
        runs = gated.runs
        assert runs < 1000
        # nothing keeps sampling for the departed client: the run count stays put
        assert client.post("/api/next-token", json={"prompt": PROMPT}).status_code == 200
        assert gated.runs == runs + 1


def test_declared_body_over_the_limit_is_refused_before_it_is_sent(capped):
    """Content-Length of 1 GB and no body at all: the 413 comes back without reading it."""
    _, url, _ = capped
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"POST /api/next-token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 1000000000\r\n\r\n")
        head = s.recv(4096).decode()
    assert head.startswith("HTTP/1.1 413")
    assert "larger than the limit of 1000 bytes" in head


def test_chunked_body_is_counted_as_it_arrives(capped):
    """No Content-Length: the server answers 413 once 1000 bytes arrived, while the client still sends."""
    _, url, _ = capped
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"POST /api/next-token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        chunk = b'{"prompt": "' + b"a" * 500
        s.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        s.settimeout(10)
        answer = b""
        sent = len(chunk)
        while b"\r\n\r\n" not in answer:
            if sent < 10_000_000:  # keep sending until the server answers (it must, long before 10 MB)
                piece = b"a" * 500
                try:
                    s.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                    sent += len(piece)
                except OSError:
                    pass
                s.settimeout(0.05)
            else:
                s.settimeout(10)
            try:
                data = s.recv(4096)
            except TimeoutError:
                continue
            if not data:
                break
            answer += data
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 10_000_000


def test_only_model_requests_count():
    def scope(method, path):
        return {"type": "http", "method": method, "path": path}

    assert is_inference(scope("POST", "/api/next-token")) and is_inference(scope("GET", "/api/generate/stream"))
    assert is_inference(scope("POST", "/api/nsp/quiz/q001/answer"))
    for method, path in [("GET", "/api/health"), ("GET", "/api/models"), ("GET", "/api/nsp/quiz"),
                         ("GET", "/"), ("GET", "/static/lib/api.js"), ("POST", "/generate")]:
        assert not is_inference(scope(method, path)), path


def test_zero_means_no_cap_and_the_setting_reaches_the_app(tiny_models_dir, monkeypatch):
    assert not AdmissionState(max_in_flight=0, in_flight=10_000).full()
    assert AdmissionState(max_in_flight=2, in_flight=2).full()
    assert Settings().max_concurrent_requests == 64
    monkeypatch.setenv("PLAYGROUND_MAX_CONCURRENT_REQUESTS", "5")
    assert create_app(Settings(models_dir=tiny_models_dir)).state.admission.max_in_flight == 5


def test_generations_hold_at_most_their_share_and_the_rest_is_still_served(tiny_models_dir):
    """Cap 4, share 0.5: two held streams fill the generations' share; a third generation is
    refused while every other model request is still admitted."""
    # parallel_runs 3: the two gated streams hold two model slots, BERT gets the third
    app = create_app(Settings(models_dir=tiny_models_dir, max_concurrent_requests=4, generation_share=0.5,
                              parallel_runs=3))
    with live(app) as url:
        gated = GatedSession(app.state.registry.default.gpt.session)
        app.state.registry.default.gpt.session = gated
        admission = app.state.admission
        with httpx.Client(base_url=url, timeout=10) as a, httpx.Client(base_url=url, timeout=10) as b, \
                httpx.Client(base_url=url, timeout=10) as other:
            body = {"prompt": PROMPT, "max_new_tokens": 20}
            with a.stream("POST", "/api/generate/stream", json=body) as s1, \
                    b.stream("GET", "/api/generate/stream", params=body) as s2:
                assert s1.status_code == s2.status_code == 200
                wait_for(lambda: admission.generations == 2, "both streams to be counted")
                for path in ("/api/generate", "/api/generate/stream"):
                    r = other.post(path, json=body)
                    assert r.status_code == 503 and "more than 2 generations" in r.json()["detail"], path
                r = other.post("/api/mask-fill", json={"text": "the [MASK]ing"})
                assert r.status_code == 200  # BERT: not behind the gated GPT session
                assert admission.in_flight == 2 and admission.rejected == 2
                gated.gate.set()
                s1.read(), s2.read()
        wait_for(lambda: admission.in_flight == 0 and admission.generations == 0, "the streams to leave")
