"""App fixtures: a client over the tiny real models (tests/conftest.py trains them once per session)."""
from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.registry import ModelSet, read_meta
from app.runtime import Runtime
from app.main import create_app


@pytest.fixture(scope="session", autouse=True)
def testclient_host():
    """TestClient sends `Host: testserver`: allow that name (app/hosts.py refuses unknown hosts)."""
    import os

    os.environ.setdefault("PLAYGROUND_ALLOWED_HOSTS", '["testserver"]')
    yield


@pytest.fixture(scope="session")
def models(tiny_models_dir) -> ModelSet:
    return ModelSet.load(read_meta(tiny_models_dir), Runtime())


@pytest.fixture(scope="module")
def client(tiny_models_dir):
    with TestClient(create_app(Settings(models_dir=tiny_models_dir))) as c:
        yield c


def sse_events(body: str) -> list[tuple[str, dict]]:
    """Parse a text/event-stream body into (event, data) pairs."""
    events = []
    for block in body.split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        events.append((fields["event"], json.loads(fields["data"])))
    return events


@pytest.fixture
def parse_sse():
    return sse_events

