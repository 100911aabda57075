"""Issue 53 must 3: the join key in the QR link. A whole class behind one address (a school's NAT)
joins by the QR code's link while a guesser on that address keeps guessing, and a wrong key tells
the guesser nothing a wrong code would not (app/classes/joinkey.py).

Every phone here is a TestClient bound to one loopback address (tests/app/class_kit.py), as the
server sees phones behind a NAT; `spent` keeps a spent address spent however slow the machine."""
from __future__ import annotations

import base64
import re
from contextlib import contextmanager
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from fastapi.testclient import TestClient

from app.classes import door, guard
from app.config import Settings
from app.main import create_app
from tests.app.class_kit import browser, go, start
from tests.app.test_class_room import spend_guesses
from tests.conftest import SHIPPED_MODELS

TOKEN = "join-key-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PUBLIC = "http://192.168.1.20:8000"  # the address students reach (--public-url)
NAT = "127.0.0.30"  # the school's one public address
CLASS = 30


@contextmanager
def served(data_dir, join_burst: int = CLASS + 10):
    """The app with --public-url, and the new-nickname budget a class behind one address needs
    (`--class-join-burst`: the key lifts the code budget, never that one), which gives none back
    during a test however slow the machine."""
    application = create_app(Settings(models_dir=SHIPPED_MODELS, data_dir=data_dir, instructor_token=TOKEN,
                                      public_url=PUBLIC, class_join_burst=join_burst, class_join_every_s=3600))
    with TestClient(application):
        yield application


@pytest.fixture
def data(tmp_path):
    return tmp_path / "data"


@pytest.fixture
def app(data):
    with served(data) as application:
        yield application


@pytest.fixture
def teacher(app):
    return browser(app, "127.0.0.1", headers=AUTH)


@pytest.fixture
def spent(monkeypatch):
    monkeypatch.setattr(guard, "CODE_EVERY_S", 3600.0)  # no guess refills during the test


def key_of(teacher, code: str) -> str:
    return teacher.get(f"/api/sessions/{code}").json()["join_key"]


def post_join(app, code: str, body: dict, address: str = NAT):
    return browser(app, address).post(f"/api/sessions/{code}/join", json=body)


def other_code(code: str) -> str:
    return "KMTKMT" if code != "KMTKMT" else "KMTKMA"


def test_the_class_behind_one_address_joins_by_the_qr_link_while_the_guesser_keeps_guessing(spent, app, teacher):
    code = start(teacher)
    key = key_of(teacher, code)
    spend_guesses(app, code, NAT)
    statuses = [post_join(app, code, {"nickname": f"Student {k}", "key": key}).status_code for k in range(CLASS)]
    assert statuses == [200] * CLASS
    state = teacher.get(f"/api/sessions/{code}").json()
    assert state["joined"] == CLASS and state["door"] == []  # in by themselves: nobody waited for the teacher
    # the guesser on the same address is still refused: wrong codes, and the right code without the key
    guesser = browser(app, NAT)
    assert guesser.get(f"/api/sessions/{other_code(code)}").status_code == 429
    assert post_join(app, other_code(code), {"nickname": "Guess"}).status_code == 429
    assert post_join(app, code, {"nickname": "Guess"}).status_code == 429
    assert teacher.get(f"/api/sessions/{code}").json()["joined"] == CLASS


def test_a_wrong_key_gets_the_same_429_as_a_wrong_code(spent, app, teacher):
    code = start(teacher)
    key = key_of(teacher, code)
    spend_guesses(app, code, NAT)
    flipped = key[:-1] + ("A" if key[-1] != "A" else "B")
    answers = {
        "wrong code": post_join(app, other_code(code), {"nickname": "Ana"}),
        "wrong code, the right key": post_join(app, other_code(code), {"nickname": "Ana", "key": key}),
        "right code, no key": post_join(app, code, {"nickname": "Ben"}),
        "right code, a wrong key": post_join(app, code, {"nickname": "Cy", "key": flipped}),
        "right code, an empty key": post_join(app, code, {"nickname": "Dee", "key": ""}),
        "right code, a key of other letters": post_join(app, code, {"nickname": "Eve", "key": "É" * 22}),
        "right code, a key too long": post_join(app, code, {"nickname": "Fay", "key": key * 200}),
    }
    for what, r in answers.items():
        assert r.status_code == 429, (what, r.text)
        assert r.json()["parameter"] == "code" and int(r.headers["Retry-After"]) >= 1, what
    assert len({r.json()["detail"] for r in answers.values()}) == 1  # one answer, whatever was sent
    # a wrong key is no key: the right code's joins knock, as the typed code's do
    door.settled()
    state = teacher.get(f"/api/sessions/{code}").json()
    assert state["joined"] == 0 and sorted(state["door"]) == ["Ben", "Cy", "Dee", "Eve", "Fay"]


def test_a_wrong_key_from_a_quiet_address_is_the_typed_codes_join(app, teacher):
    code = start(teacher)
    assert post_join(app, code, {"nickname": "Ana", "key": "not-the-key"}, "127.0.0.31").status_code == 200
    r = post_join(app, other_code(code), {"nickname": "Ben", "key": key_of(teacher, code)}, "127.0.0.31")
    assert r.status_code == 404 and r.json()["parameter"] == "code"  # a wrong code is a wrong code, key or not


def test_the_key_is_in_student_url_and_the_qr_link_and_never_in_a_students_state(app, teacher):
    made = teacher.post("/api/sessions", json={})
    assert made.status_code == 201
    code, url = made.json()["code"], made.json()["student_url"]
    key = key_of(teacher, code)
    assert len(base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))) * 8 >= 128  # a guesser's 2**128 tries
    assert re.fullmatch(r"[A-Za-z0-9_-]+", key)  # URL-safe as it is: the link needs no escaping
    assert url == f"{PUBLIC}/join?code={code}&key={key}"
    assert parse_qs(urlsplit(url).query) == {"code": [code], "key": [key]}
    assert teacher.get(f"/api/sessions/{code}").json()["join_url"] == url  # the teacher page's QR code
    other = teacher.post("/api/sessions", json={}).json()
    assert key_of(teacher, other["code"]) != key  # each session draws its own
    # the projector's own link gets the same link for its QR code
    wall = browser(app)
    projector_key = teacher.get(f"/api/sessions/{code}").json()["projector_key"]
    assert wall.post(f"/api/sessions/{code}/projector", json={"key": projector_key}).status_code == 204
    assert wall.get(f"/api/sessions/{code}").json()["join_url"] == url
    # the QR code of that link is drawn (GET /api/qr.svg, as the page asks for it)
    qr = teacher.get(f"/api/qr.svg?text={quote(url, safe='')}")
    assert qr.status_code == 200 and qr.headers["content-type"].startswith("image/svg+xml")
    # a student, joined or not, never reads the key: not in the state, the results or the roster
    phone = browser(app)
    assert phone.post(f"/api/sessions/{code}/join", json={"nickname": "Ana", "key": key}).status_code == 200
    go(teacher, code, leaderboard=True)
    for read in (phone.get(f"/api/sessions/{code}"), browser(app).get(f"/api/sessions/{code}"),
                 phone.get(f"/api/sessions/{code}/results")):
        assert read.status_code == 200 and key not in read.text
    with phone.stream("GET", f"/api/sessions/{code}/events") as events:  # the phone's event stream too
        first = next(events.iter_text())
    assert "event: state" in first and key not in first


def test_a_restart_keeps_the_key(spent, data, app, teacher):
    code = start(teacher)
    key = key_of(teacher, code)
    with served(data) as again:  # a second server process on the same database
        assert browser(again, "127.0.0.1", headers=AUTH).get(f"/api/sessions/{code}").json()["join_key"] == key
        spend_guesses(again, code, NAT)
        assert post_join(again, code, {"nickname": "Ana", "key": key}).status_code == 200
        assert post_join(again, code, {"nickname": "Ben"}).status_code == 429


def test_the_key_keeps_the_rooms_rules_and_the_nicknames(spent, app, teacher):
    code = start(teacher, max_participants=2)
    key = key_of(teacher, code)
    spend_guesses(app, code, NAT)
    assert post_join(app, code, {"nickname": "Ana", "key": key}).status_code == 200
    taken = post_join(app, code, {"nickname": "ana", "key": key})  # the same nickname, another phone
    assert taken.status_code == 409 and taken.json()["parameter"] == "nickname"
    assert post_join(app, code, {"nickname": "Ben", "key": key}).status_code == 200
    full = post_join(app, code, {"nickname": "Cy", "key": key})
    assert full.status_code == 409 and "full" in full.json()["detail"]
    go(teacher, code, max_participants=10, room_locked=True)
    closed = post_join(app, code, {"nickname": "Cy", "key": key})
    assert closed.status_code == 409 and "closed" in closed.json()["detail"]
    bad = post_join(app, code, {"nickname": "<b>Dee</b>", "key": key})
    assert bad.status_code == 422 and bad.json()["parameter"] == "nickname"
    # another browser taking a nickname back (rejoin) gets no pass with the key: rejoin codes stay budgeted
    assert post_join(app, code, {"nickname": "Ana", "rejoin": "ABCDEF", "key": key}).status_code == 429
    assert teacher.get(f"/api/sessions/{code}").json()["joined"] == 2


def test_the_key_does_not_lift_the_addresss_budget_of_new_nicknames(spent, tmp_path):
    """The key is on the projector, as public in the room as the code: one student's script with it
    must still not fill the class (guard.JoinBudget: --class-join-burst, default 6)."""
    with served(tmp_path / "data", join_burst=guard.JOIN_BURST) as app:
        teacher = browser(app, "127.0.0.1", headers=AUTH)
        code = start(teacher)
        key = key_of(teacher, code)
        spend_guesses(app, code, NAT)
        answers = [post_join(app, code, {"nickname": f"bot{k}", "key": key}) for k in range(guard.JOIN_BURST + 2)]
        assert [r.status_code for r in answers] == [200] * guard.JOIN_BURST + [429, 429]
        assert answers[-1].json()["parameter"] == "nickname"
