"""Slow clients cannot hold the server (app/middleware.py body time limit, app/admission.py counting
only requests that can use the model, app/protocol.py header timeout and write-stall cut), and a
generation keeps its share of the model under a flood of one-run requests (app/tasks/gpt.py CHUNK).

Functional: the tests assert statuses, counts and that connections end, with generous waits; no
timing is asserted."""
from __future__ import annotations

import asyncio
import math
import socket
import threading
import time
from contextlib import contextmanager

import httpx
import pytest
import uvicorn

from app.admission import AdmissionControl, AdmissionState
from app.config import Settings
from app.contract import MASK
from app.main import create_app
from app.protocol import GuardedProtocol
from app.registry import ModelSet, read_meta
from app.runtime import Runtime
from app.tasks import gpt as gpt_task

PROMPT = "the king and the crown"


class FastTimeouts(GuardedProtocol):
    header_timeout_s = 1.0
    send_timeout_s = 1.0


@contextmanager
def live(app, protocol=FastTimeouts, lifespan="on"):
    """Serve `app` with the guarded protocol on a free 127.0.0.1 port; yields (host, port)."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan=lifespan,
                                           http=protocol))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started, "server start")
        yield "127.0.0.1", server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)


def wait_for(condition, what: str, limit_s: float = 15.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def read_until_closed(s: socket.socket, limit_s: float = 15.0) -> bytes:
    """Everything the server sends until it closes (or resets) the connection."""
    s.settimeout(limit_s)
    data = b""
    try:
        while chunk := s.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data


@pytest.fixture
def capped_app(tiny_models_dir):
    """One model slot in all: anything that held a slot it is not using would block everyone."""
    return create_app(Settings(models_dir=tiny_models_dir, max_concurrent_requests=1, body_timeout_s=1.0))


def test_a_slow_body_holds_no_slot_and_is_cut_after_the_body_timeout(capped_app):
    with live(capped_app) as (host, port):
        slow = socket.create_connection((host, port))
        slow.sendall(b"POST /api/next-token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 40\r\n\r\n{\"pro")
        time.sleep(0.2)
        # the only slot is free for the student who sends a whole body
        r = httpx.post(f"http://{host}:{port}/api/next-token", json={"prompt": PROMPT}, timeout=10)
        assert r.status_code == 200
        answer = read_until_closed(slow)  # the slow one is answered and let go
        slow.close()
        assert answer.startswith(b"HTTP/1.1 408"), answer[:100]
        assert b'"parameter": null' in answer and b"did not arrive within 1 s" in answer
        assert capped_app.state.admission.in_flight == 0


def test_a_body_that_finishes_while_the_slot_is_taken_gets_503(tiny_models_dir):
    """The cap is checked again when the body is complete (it was free when the request began)."""
    app = create_app(Settings(models_dir=tiny_models_dir, max_concurrent_requests=1))
    with live(app) as (host, port):
        late = socket.create_connection((host, port))
        body = b'{"prompt": "the king"}'
        late.sendall(b"POST /api/next-token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body[:5]))
        time.sleep(0.2)
        app.state.admission.in_flight += 1  # someone else holds the only slot now
        late.sendall(body[5:])
        late.settimeout(10)
        answer = late.recv(65536)
        late.close()
        app.state.admission.in_flight -= 1
        assert answer.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in answer.lower()
        assert app.state.admission.rejected == 1 and app.state.admission.in_flight == 0


def endless_stream_app(state: dict):
    """An inference path that streams 64 KiB chunks until its client is gone."""
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        chunk = b"data: " + b"x" * 65536 + b"\n\n"
        state["started"] = True
        try:
            while not state.get("stop"):
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                state["sent"] = state.get("sent", 0) + 1
                await asyncio.sleep(0)
                if state["sent"] > 100_000:
                    break
        finally:
            state["ended"] = True
    return app


def test_a_stream_that_is_not_read_holds_no_slot_and_is_cut():
    state: dict = {}
    admission = AdmissionState(max_in_flight=1)
    app = AdmissionControl(endless_stream_app(state), admission)
    with live(app, lifespan="off") as (host, port):
        reader = socket.socket()
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        reader.connect((host, port))
        reader.sendall(b"GET /api/generate/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        wait_for(lambda: state.get("started"), "the stream to start")
        # the client reads nothing: once the buffers are full the app waits in send, uncounted
        wait_for(lambda: admission.in_flight == 0, "the blocked stream to give up its slot")
        sent = state["sent"]
        assert sent < 100_000
        wait_for(lambda: state.get("ended"), "the stalled connection to be cut")
        assert admission.in_flight == 0 and admission.admitted == 1
        reader.close()
    state["stop"] = True


def test_a_slow_reader_that_keeps_reading_is_never_cut():
    """Reads 64 KiB every 0.3 s: writes stall and resume again and again, for longer than the
    1 s write-stall limit in all; the stream goes on."""
    state: dict = {}
    app = AdmissionControl(endless_stream_app(state), AdmissionState(max_in_flight=1))
    with live(app, lifespan="off") as (host, port):
        reader = socket.socket()
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        reader.connect((host, port))
        reader.sendall(b"GET /api/generate/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        got = 0
        reader.settimeout(5)
        end = time.monotonic() + 4
        while time.monotonic() < end:
            got += len(reader.recv(65536))
            time.sleep(0.3)
        assert got > 0 and not state.get("ended")
        state["stop"] = True
        reader.close()


def test_unfinished_headers_are_cut_after_the_header_timeout(capped_app):
    with live(capped_app) as (host, port):
        loris = [socket.create_connection((host, port)) for _ in range(5)]
        for s in loris:
            s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n")  # never the blank line
        for s in loris:
            assert read_until_closed(s) == b""  # closed without an answer
            s.close()
        assert httpx.get(f"http://{host}:{port}/api/health", timeout=10).status_code == 200


def test_a_request_uvicorn_cannot_parse_gets_the_json_error_shape(capped_app):
    with live(capped_app) as (host, port):
        with socket.create_connection((host, port)) as s:
            s.sendall(b"NOT AN HTTP REQUEST\x00\r\n\r\n")
            answer = read_until_closed(s)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400") and b"content-type: application/json" in head
    assert b"content-security-policy:" in head and b"x-content-type-options: nosniff" in head
    assert b'"parameter": null' in body and b"POST body" in body


def test_a_generation_keeps_its_turns_under_a_mask_fill_flood(tiny_models_dir):
    """One model run at a time, FLOOD threads asking BERT back to back, and a generation of N
    characters: the gate is first come first served and a generation takes CHUNK characters per
    turn, so at most FLOOD BERT runs come between two of its turns. (Waiting again for every
    character, it would sit behind FLOOD runs N times.)"""
    models = ModelSet.load(read_meta(tiny_models_dir), Runtime(threads=1, parallel_runs=1))
    log: list[str] = []
    bert_session, gpt_session = models.bert.session, models.gpt.session

    class LoggedBert:
        def run(self, names, feeds):
            log.append("B")
            return bert_session.run(names, feeds)

    class LoggedGpt:
        def io_binding(self):
            return gpt_session.io_binding()

        def run_with_iobinding(self, binding):
            log.append("G")
            return gpt_session.run_with_iobinding(binding)

        def run(self, names, feeds):
            log.append("G")
            return gpt_session.run(names, feeds)

    models.bert.session, models.gpt.session = LoggedBert(), LoggedGpt()
    FLOOD, N = 4, 48
    ids, _ = models.vocab.encode("the [MASK]ing".replace("[MASK]", "a"))
    ids[1] = MASK
    stop = threading.Event()

    def flood():
        while not stop.is_set():
            models.bert.fill(ids, [1], 5)

    threads = [threading.Thread(target=flood) for _ in range(FLOOD)]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: log.count("B") > 20, "the flood to start")
        prompt, _ = models.vocab.encode(PROMPT)
        text = list(models.gpt.generate(prompt, N, 1.0, 0, 1.0, 0))
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert len(text) == N
    first, last = log.index("G"), len(log) - 1 - log[::-1].index("G")
    during = log[first:last + 1]
    turns = math.ceil(N / 8)  # the share promised: at least 8 characters per turn (gpt.CHUNK)
    assert gpt_task.CHUNK >= 8
    assert during.count("G") == N  # the prefill and N - 1 steps, the last character needs no step
    assert during.count("B") <= turns * FLOOD, (during.count("B"), turns, FLOOD)
    assert log[last + 1:].count("B") > 0  # the flood was still going when the generation ended
