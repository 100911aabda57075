"""app/compression.py answers what Starlette's GZipMiddleware answered: which responses are compressed,
their headers, and bodies that decompress to the original (whole and streamed)."""
from __future__ import annotations

import gzip

import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from app.compression import Compression, add_vary

TEXT = ("the king and the crown, " * 200).encode()  # 4,800 bytes


async def whole(request):
    return Response(TEXT, media_type="application/json", headers={"vary": "Cookie"})


async def small(request):
    return PlainTextResponse("short")


async def streamed(request):
    async def chunks():
        for i in range(0, len(TEXT), 1000):
            yield TEXT[i:i + 1000]
    return StreamingResponse(chunks(), media_type="text/plain")


async def events(request):
    return Response(TEXT, media_type="text/event-stream")


async def partial(request):
    return Response(TEXT, status_code=206, media_type="text/plain")


async def encoded(request):
    return Response(gzip.compress(TEXT), media_type="text/plain", headers={"content-encoding": "gzip"})


@pytest.fixture(scope="module")
def client():
    routes = [Route(f"/{f.__name__}", f) for f in (whole, small, streamed, events, partial, encoded)]
    app = Compression(Starlette(routes=routes), minimum_size=1000, compresslevel=5)
    with TestClient(app) as c:
        yield c


def raw(client, path: str, gz: bool = True):
    headers = {"accept-encoding": "gzip" if gz else "identity"}
    with client.stream("GET", path, headers=headers) as r:
        return r, b"".join(r.iter_raw())


def test_a_whole_answer_is_compressed_with_its_length_and_vary(client):
    r, body = raw(client, "/whole")
    assert r.headers["content-encoding"] == "gzip" and int(r.headers["content-length"]) == len(body) < len(TEXT)
    assert gzip.decompress(body) == TEXT and r.headers["vary"] == "Cookie, Accept-Encoding"


def test_a_streamed_answer_is_compressed_chunk_by_chunk(client):
    r, body = raw(client, "/streamed")
    assert r.headers["content-encoding"] == "gzip" and "content-length" not in r.headers
    assert gzip.decompress(body) == TEXT and r.headers["vary"] == "Accept-Encoding"


def test_without_gzip_the_answer_is_as_is_but_says_vary(client):
    r, body = raw(client, "/whole", gz=False)
    assert "content-encoding" not in r.headers and body == TEXT and r.headers["vary"] == "Cookie, Accept-Encoding"


@pytest.mark.parametrize("path", ["/small", "/events", "/partial", "/encoded"])
def test_small_excluded_partial_and_encoded_answers_are_left_alone(client, path):
    r, body = raw(client, path)
    plain = raw(client, path, gz=False)[1]
    assert body == plain and "vary" not in r.headers
    assert r.headers.get("content-encoding") == ("gzip" if path == "/encoded" else None)


def test_vary_is_added_once():
    assert add_vary([(b"content-type", b"text/plain")]) == [(b"content-type", b"text/plain"), (b"vary", b"Accept-Encoding")]
    assert add_vary([(b"Vary", b"Cookie")]) == [(b"Vary", b"Cookie, Accept-Encoding")]
