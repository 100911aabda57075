"""Issue 34, against a real `python -m app` process (uvicorn, its HTTP protocol, real sockets):

- SIGTERM with phones following the class (event streams open) never finished: uvicorn waits for
  every response, and an event stream has no end. Now the streams are ended at once and cleanly
  (the chunked body's last chunk, then the connection closed), without waiting for the shutdown
  deadline; the restarted server has every answer.
- Joins per address, with clients bound to real loopback addresses (127.0.0.0/8): three addresses
  cannot fill a class of 60; students from their own addresses all get in."""
from __future__ import annotations

import json
import signal
import socket
import time

import httpx
import pytest

from app.classes.guard import JOIN_BURST
from tests.app.run_servers import AUTH, server_process
from tests.conftest import SHIPPED_MODELS

STREAMS = 12


def client(address: str) -> httpx.Client:
    """A browser on its own address: the socket is bound to `address` (any of 127.0.0.0/8)."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=30)


def open_stream(url: str, path: str, headers: dict, address: str) -> socket.socket:
    """An event stream on a raw socket, read until its first event arrived; left open."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30, source_address=(address, 0))
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n{head}\r\n".encode())
    got = b""
    while b"event: state" not in got:
        chunk = sock.recv(65536)
        assert chunk, got
        got += chunk
    assert got.startswith(b"HTTP/1.1 200") and b"text/event-stream" in got
    return sock


def read_to_end(sock: socket.socket, limit_s: float = 60) -> bytes:
    """What the stream sends until the server ends it; fails if it is still open after `limit_s`
    (the server's keep-alive pings would otherwise keep a hung shutdown reading for ever)."""
    rest, deadline = b"", time.monotonic() + limit_s
    while time.monotonic() < deadline:
        chunk = sock.recv(65536)
        if not chunk:
            return rest
        rest += chunk
    raise AssertionError(f"the event stream was still open {limit_s:.0f} s after SIGTERM: {rest[-200:]!r}")


@pytest.mark.slow
def test_sigterm_ends_every_event_stream_and_the_restart_keeps_the_answers(tmp_path):
    data, log = tmp_path / "data", tmp_path / "server.log"
    with server_process(SHIPPED_MODELS, data, log) as (url, proc):
        teacher = httpx.Client(base_url=url, headers=AUTH, timeout=30)
        code = teacher.post("/api/sessions", json={"nsp_count": 2}).json()["code"]
        phones = []
        for k in range(STREAMS - 1):
            phone = client(f"127.0.3.{k + 2}")
            assert phone.post(f"{url}/api/sessions/{code}/join", json={"nickname": f"P{k}"}).status_code == 200
            phones.append(phone)
        item = teacher.put(f"/api/sessions/{code}/state", json={"page": "nsp"}).json()["item"]
        answer = {"activity": "nsp", "item": item, "answer": "IsNext"}
        assert phones[0].post(f"{url}/api/sessions/{code}/answers", json=answer).status_code == 201
        streams = [open_stream(url, f"/api/sessions/{code}/events",
                               {"Cookie": f"pp_class_{code}={p.cookies[f'pp_class_{code}']}"}, f"127.0.3.{k + 2}")
                   for k, p in enumerate(phones)]
        streams.append(open_stream(url, f"/api/sessions/{code}/events", AUTH, "127.0.0.1"))  # the projector
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        ends = [read_to_end(s) for s in streams]
        rc = proc.wait(timeout=60)
        took = time.monotonic() - t0
        print(f"SIGTERM with {len(streams)} event streams open: exited in {took:.2f} s (rc {rc})")
    said = log.read_text()
    assert rc in (0, -signal.SIGTERM), said[-2000:]
    # every stream ended cleanly (the chunked body's end), none cut by the shutdown deadline
    assert all(end.endswith(b"0\r\n\r\n") for end in ends), [end[-40:] for end in ends]
    assert "graceful shutdown exceeded" not in said and "Traceback" not in said, said[-3000:]
    # nothing lost: the restarted server has the answer, and the phone is still in
    with server_process(SHIPPED_MODELS, data, log) as (url, proc):
        teacher = httpx.Client(base_url=url, headers=AUTH, timeout=30)
        teacher.put(f"/api/sessions/{code}/state", json={"revealed": True})
        pooled = teacher.get(f"/api/sessions/{code}/results").json()["items"][0]
        assert pooled["counts"] == {"IsNext": 1, "NotNext": 0}
        again = client("127.0.3.2")
        again.cookies = phones[0].cookies
        assert again.get(f"{url}/api/sessions/{code}").json()["me"]["nickname"] == "P0"


@pytest.mark.slow
def test_three_real_addresses_cannot_fill_a_class(tmp_path):
    with server_process(SHIPPED_MODELS, tmp_path / "data", tmp_path / "server.log") as (url, _):
        teacher = httpx.Client(base_url=url, headers=AUTH, timeout=30)
        code = teacher.post("/api/sessions", json={}).json()["code"]  # 60 places
        joined = 0
        for address in ("127.0.4.2", "127.0.4.3", "127.0.4.4"):
            for k in range(20):  # a script: a new browser (no cookie) and a made-up nickname each time
                r = client(address).post(f"{url}/api/sessions/{code}/join", json={"nickname": f"{address}-{k}"})
                assert r.status_code in (200, 429), r.text
                joined += r.status_code == 200
                if r.status_code == 429:
                    assert r.json()["parameter"] == "nickname" and int(r.headers["retry-after"]) >= 1
        print(f"three addresses, 20 joins each: {joined} joined of 60 places")
        assert joined <= 3 * JOIN_BURST + 3 and joined < 30
        statuses = [client(f"127.0.5.{k + 2}").post(f"{url}/api/sessions/{code}/join",
                                                     json={"nickname": f"Student {k}"}).status_code for k in range(30)]
        assert statuses == [200] * 30
        assert json.loads(teacher.get(f"/api/sessions/{code}").text)["joined"] == joined + 30
