"""What the class-session tests share: browsers on their own loopback addresses (the per-address
budgets of app/classes/guard.py see each phone as a phone on the school's Wi-Fi does), and the
teacher's calls that must succeed."""
from __future__ import annotations

import itertools
from contextlib import contextmanager

from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from tests.conftest import SHIPPED_MODELS

_hosts = itertools.count(10)


def host() -> str:
    """A new address of 127.0.0.0/8 (all loopback), never the teacher's 127.0.0.1."""
    n = next(_hosts)
    return f"127.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"


def browser(app, address: str | None = None, **kw) -> TestClient:
    return TestClient(app, client=(address or host(), 50000), **kw)


def start(teacher, **body) -> str:
    r = teacher.post("/api/sessions", json=body)
    assert r.status_code == 201, r.text
    return r.json()["code"]


def go(teacher, code: str, **state) -> dict:
    r = teacher.put(f"/api/sessions/{code}/state", json=state)
    assert r.status_code == 200, r.text
    return r.json()


def join(app, code: str, nickname: str, address: str | None = None) -> tuple[TestClient, int]:
    s = browser(app, address)
    return s, s.post(f"/api/sessions/{code}/join", json={"nickname": nickname}).status_code


@contextmanager
def served(data_dir, token: str):
    """The app on the shipped models with its lifespan running (registry, class database)."""
    application = create_app(Settings(models_dir=SHIPPED_MODELS, data_dir=data_dir, instructor_token=token))
    with TestClient(application):
        yield application
