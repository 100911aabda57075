"""Issue 53 must 4: nicknames are unique by how they look. Two nicknames that render alike (the
confusables of Unicode TR39, after NFKC and case folding) are one nickname for joining, admitting
and the roster, and a name the teacher let in is taken only as the teacher spelt it."""
from __future__ import annotations

import pytest
from sqlalchemy import text

from app.classes import db as dbmod
from app.classes.codes import clean_nickname
from app.classes.db import Database, database_url
from tests.app.class_kit import browser, go, join, served, start

TOKEN = "lookalike-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CYRILLIC_ZOE = "Z\u043ee"  # "Zоe": a Cyrillic о


@pytest.fixture
def app(tmp_path):
    with served(tmp_path / "data", TOKEN) as application:
        yield application


@pytest.fixture
def teacher(app):
    return browser(app, "127.0.0.1", headers=AUTH)


def test_a_look_alike_never_takes_the_name_the_teacher_let_in(app, teacher):
    """Issue 53: room locked, the teacher admits "Zoe", an attacker loops joins as "Zоe": it was in on
    try 129, the real Zoe then got 409, and the roster showed "Zоe"."""
    code = start(teacher)
    go(teacher, code, room_locked=True, admit="Zoe")
    for _ in range(150):
        r = browser(app).post(f"/api/sessions/{code}/join", json={"nickname": CYRILLIC_ZOE})
        assert r.status_code == 409 and r.json()["parameter"] == "nickname", r.text
    assert "looks like" in r.json()["detail"] and "spelt" in r.json()["detail"]
    r = browser(app).post(f"/api/sessions/{code}/join", json={"nickname": "Zoe"})
    assert r.status_code == 200 and r.json()["nickname"] == "Zoe"
    assert [p["nickname"] for p in teacher.get(f"/api/sessions/{code}").json()["participants"]] == ["Zoe"]
    r = browser(app).post(f"/api/sessions/{code}/join", json={"nickname": CYRILLIC_ZOE})
    assert r.status_code == 409 and r.json()["parameter"] in ("nickname", "code")


def test_the_teacher_confirms_a_look_alike_by_admitting_that_spelling(app, teacher):
    code = start(teacher)
    go(teacher, code, room_locked=True, admit="Zoe")
    go(teacher, code, admit=CYRILLIC_ZOE)  # the student's keyboard spells it so: the teacher says yes
    assert teacher.get(f"/api/sessions/{code}").json()["admitted"] == [CYRILLIC_ZOE]
    assert browser(app).post(f"/api/sessions/{code}/join", json={"nickname": CYRILLIC_ZOE}).status_code == 200


@pytest.mark.parametrize("first, second", [
    ("Zoe", CYRILLIC_ZOE),
    ("Zoe", "\uff3a\uff4f\uff45"),  # full-width "Ｚｏｅ"
    ("Fiona", "\ufb01ona"),  # the ligature "ﬁ"
    ("Eve", "\U0001d404\U0001d42f\U0001d41e"),  # mathematical bold
    ("Zoe", "Z0E"),  # a zero drawn like an O, in capitals
    ("Ian", "\u0406an"),  # Cyrillic І
])
def test_names_that_render_alike_are_one_name_in_the_roster(app, teacher, first, second):
    code = start(teacher)
    assert join(app, code, first)[1] == 200
    r = browser(app).post(f"/api/sessions/{code}/join", json={"nickname": second})
    assert r.status_code == 409 and r.json()["parameter"] == "nickname"
    assert clean_nickname(first)[1] == clean_nickname(second)[1]


def test_names_that_look_different_stay_apart():
    keys = {clean_nickname(n)[1] for n in ("Zoe", "Zoey", "Zoë", "Ana", "Anna", "Lou", "Lu")}
    assert len(keys) == 7
    assert len(clean_nickname("m" * 24)[1]) <= 40  # "m" -> "rn": a long skeleton still fits its column


def test_the_upgrade_gives_stored_nicknames_their_look_alike_keys(tmp_path, monkeypatch):
    """Schema 6: each live participant's key becomes the look-alike key; removed ones keep theirs; two
    that now collide are both kept (the later one's key gets "<its id>"), and a let-in list of keys
    becomes names the teacher spelt as those keys."""
    url = database_url(None, tmp_path)
    monkeypatch.setattr(dbmod, "LATEST", 5)  # a database made by the previous release
    db = Database(url)
    db.migrate()
    with db.writing() as s:
        s.execute(text("INSERT INTO class_sessions (code, created_at, expires_at, plan, page, locked, revealed, "
                       "leaderboard, version) VALUES ('KMT4HX', '2026-01-01', '2999-01-01', "
                       "'{\"admit\": [\"late lou\"]}', 'lobby', 0, 0, 0, 1)"))
        for pid, name, key, removed in ((1, "Ana", "<removed 1>", 1), (2, "Zoe", "zoe", 0), (3, "Z0E", "z0e", 0),
                                        (4, "\ufb01ona", "fiona", 0), (5, "Ben", "ben", 0)):
            s.execute(text("INSERT INTO class_participants (id, session_id, nickname, nickname_key, secret_hash, "
                           "joined_at, removed) VALUES (:i, 1, :n, :k, :h, '2026-01-01', :r)"),
                      {"i": pid, "n": name, "k": key, "h": f"h{pid}", "r": removed})
    db.close()
    monkeypatch.undo()
    db = Database(url)
    assert db.migrate() == dbmod.LATEST == 6
    with db.reading() as s:
        keys = dict(s.execute(text("SELECT id, nickname_key FROM class_participants")).all())
        plan = s.execute(text("SELECT plan FROM class_sessions")).scalar()
    assert keys == {1: "<removed 1>", 2: "zoe", 3: "zoe<3>", 4: "fiona", 5: "ben"}
    assert "late lou" in plan
    db.close()
