"""app/middleware.py: the request body limit (declared and streamed)."""
from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app


@pytest.fixture(scope="module")
def small(tiny_models_dir):
    with TestClient(create_app(Settings(models_dir=tiny_models_dir, max_body_bytes=100))) as c:
        yield c


def body_of(n: int) -> bytes:
    head = b'{"prompt": "'
    return head + b"a" * (n - len(head) - 2) + b'"}'


def test_bodies_up_to_the_limit_pass(small):
    assert small.post("/api/next-token", content=body_of(100), headers={"content-type": "application/json"}).status_code == 200


def test_declared_length_over_the_limit_is_413(small):
    r = small.post("/api/next-token", content=body_of(101), headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert r.json() == {"detail": "request body is larger than the limit of 100 bytes", "parameter": None}


def test_streamed_body_is_counted_without_content_length(small):
    def chunks(n):
        data = body_of(n)
        for i in range(0, len(data), 30):
            yield data[i:i + 30]

    headers = {"content-type": "application/json"}
    r = small.post("/api/next-token", content=chunks(130), headers=headers)
    assert r.status_code == 413 and r.json()["parameter"] is None
    assert small.post("/api/next-token", content=chunks(90), headers=headers).status_code == 200


def test_default_limit_is_64_kib(client):
    headers = {"content-type": "application/json"}
    assert client.post("/api/next-token", content=body_of(64 * 1024 + 1), headers=headers).status_code == 413
    r = client.post("/api/next-token", content=body_of(64 * 1024), headers=headers)
    assert r.status_code == 422 and r.json()["parameter"] == "prompt"  # within the limit, then too long a prompt
