"""Issue 43 must 3: per-address budgets on session reads and stream opens, fair to a class behind one
address. One address looping GET /api/sessions/CODE (16 connections took the class's answers from p99
43 ms to 1,102 ms) or opening streams by the thousand (1,500 delayed the next follow-me by 22.5 s) is
refused past its own budget, while the students on that same address, each with its own budget, and
the teacher are served."""
from __future__ import annotations

import time
from contextlib import ExitStack

import pytest

from app.classes.readers import (ADDRESS_BURST, ADDRESS_EVERY_S, READ_BURST, READ_EVERY_S, REFUSAL_PAUSE_S,
                                 STREAMS_PER_ADDRESS, STREAMS_PER_STUDENT, Readers)
from tests.app.class_kit import browser, join, start
from tests.app.test_class_door import AUTH, TOKEN, app, teacher  # noqa: F401 (the fixtures: the app, its teacher)

NAT = "127.0.0.30"


def test_a_read_loop_on_the_class_address_spends_its_own_budget_only(app, teacher):
    # The budgets' clock stands still here: nothing refills during the loop, so the test does not depend on
    # how fast this machine sends requests (a slow one let the bucket refill as fast as the loop spent it).
    app.state.class_readers = Readers(clock=lambda: 1000.0)
    try:
        read_loop(app, teacher)
    finally:
        app.state.class_readers = None  # the next test gets a fresh one on the real clock


def read_loop(app, teacher):
    code = start(teacher)
    students = [join(app, code, f"S{k}", NAT)[0] for k in range(3)]
    looper = browser(app, NAT)
    t0 = time.monotonic()
    statuses = [looper.get(f"/api/sessions/{code}").status_code for _ in range(ADDRESS_BURST + 80)]
    elapsed = time.monotonic() - t0
    assert statuses[:ADDRESS_BURST] == [200] * ADDRESS_BURST and 429 in statuses[ADDRESS_BURST:]
    # past the burst only what refilled meanwhile (30 a second), and every refusal came after its pause
    assert statuses.count(200) <= ADDRESS_BURST + elapsed / ADDRESS_EVERY_S + 1
    assert elapsed >= statuses.count(429) * REFUSAL_PAUSE_S
    r = next(r for r in (looper.get(f"/api/sessions/{code}/results") for _ in range(60)) if r.status_code == 429)
    assert r.json()["parameter"] == "code" and int(r.headers["Retry-After"]) >= 1  # the results share the budget
    for s in students:  # the class behind the same address: each its own budget
        assert s.get(f"/api/sessions/{code}").status_code == 200
        assert s.get(f"/api/sessions/{code}/results").status_code == 200
    assert teacher.get(f"/api/sessions/{code}").status_code == 200
    # a student looping spends the student's own budget, not the class's
    hog = students[0]
    t0 = time.monotonic()
    looped = [hog.get(f"/api/sessions/{code}").status_code for _ in range(READ_BURST + 15)]
    assert 429 in looped[READ_BURST:]  # refused past the burst, then what refilled (5 a second) meanwhile
    assert looped.count(200) <= READ_BURST + (time.monotonic() - t0) / READ_EVERY_S + 1
    assert students[1].get(f"/api/sessions/{code}").status_code == 200


def test_streams_are_capped_per_address_and_per_student(tmp_path):
    """Streams held open at once need a real server (one event loop): uvicorn in a thread, each
    client on its own loopback address."""
    import httpx

    from app.config import Settings
    from app.main import create_app
    from tests.browser.conftest import serve
    from tests.conftest import SHIPPED_MODELS

    application = create_app(Settings(models_dir=SHIPPED_MODELS, data_dir=tmp_path / "data", instructor_token=TOKEN))
    with serve(application) as base, ExitStack() as stack:
        def client(address: str, **kw) -> httpx.Client:
            transport = httpx.HTTPTransport(local_address=address)
            return stack.enter_context(httpx.Client(base_url=base, transport=transport, timeout=10, **kw))

        teacher = client("127.0.0.1", headers=AUTH)
        code = teacher.post("/api/sessions", json={}).json()["code"]
        student = client(NAT)
        assert student.post(f"/api/sessions/{code}/join", json={"nickname": "Ana"}).status_code == 200
        url = f"/api/sessions/{code}/events"
        opened = [stack.enter_context(client(NAT).stream("GET", url)).status_code for _ in range(STREAMS_PER_ADDRESS + 1)]
        assert opened == [200] * STREAMS_PER_ADDRESS + [429]
        assert stack.enter_context(student.stream("GET", url)).status_code == 200  # the student is not the address
        assert stack.enter_context(teacher.stream("GET", url)).status_code == 200
        mine = [stack.enter_context(student.stream("GET", url)).status_code for _ in range(STREAMS_PER_STUDENT)]
        assert mine == [200] * (STREAMS_PER_STUDENT - 1) + [429]
