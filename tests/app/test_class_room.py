"""Issue 34: the room's budgets and the teacher's tools, against the real app (TestClient, each
phone with its own address, as on a school network).

- A student who has joined (holds the session's cookie) is never refused by the per-address
  code-guess budget: a guesser behind the same address (a school NAT) locked out the class.
- Three addresses (phone Wi-Fi, mobile data, a laptop) cannot fill a class of 60, and the teacher
  lets a late student in by nickname past a closed room and a spent budget.
- "Remove the silent" in the lobby removed the whole class: only nicknames that never answered
  while the class did are silent; a removed nickname is free again (also after the schema upgrade).
- classes.sqlite3 is the owner's only."""
from __future__ import annotations

import itertools
import stat

import pytest
from sqlalchemy import text

from app.classes import db as dbmod
from app.classes.codes import ALPHABET
from app.classes.db import Database, database_url
from app.classes.guard import CODE_BURST, JOIN_BURST
from tests.app.class_kit import browser, go, join, served, start

# every budget here runs on a standing clock (tests/conftest.py): no test depends on the machine's speed
pytestmark = pytest.mark.usefixtures("standing_clock")

TOKEN = "room-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def data(tmp_path):
    return tmp_path / "data"


@pytest.fixture
def app(data):
    with served(data, TOKEN) as application:
        yield application


@pytest.fixture
def teacher(app):
    return browser(app, "127.0.0.1", headers=AUTH)


def spend_guesses(app, code: str, address: str) -> None:
    guesser = browser(app, address)
    wrong = (c for c in ("".join(p) for p in itertools.product(ALPHABET, repeat=6)) if c != code)
    statuses = [guesser.get(f"/api/sessions/{next(wrong)}").status_code for _ in range(CODE_BURST + 3)]
    assert statuses[-1] == 429, statuses


def test_a_guesser_behind_the_class_address_never_slows_a_student_who_joined(app, teacher):
    code = start(teacher, nsp_count=2)
    nat = "127.0.0.5"  # the school's one public address
    students = [join(app, code, f"S{k}", nat)[0] for k in range(5)]
    item = go(teacher, code, page="nsp")["item"]
    spend_guesses(app, code, nat)
    for k, s in enumerate(students):  # state, answers, results and events: all served
        assert s.get(f"/api/sessions/{code}").status_code == 200
        r = s.post(f"/api/sessions/{code}/answers", json={"activity": "nsp", "item": item, "answer": "IsNext"})
        assert r.status_code == 201, r.text
        assert s.get(f"/api/sessions/{code}/results").status_code == 200
    with students[0].stream("GET", f"/api/sessions/{code}/events") as stream:
        assert stream.status_code == 200
    # the teacher's logged-in browser (the projector) from that address too
    login = browser(app, nat, follow_redirects=False)
    assert login.post("/login", json={"token": TOKEN}).status_code == 303
    assert login.get(f"/api/sessions/{code}").json()["answered"] == 5
    # a guess (a wrong code, a made-up cookie) from there is still refused before any look-up
    fake = browser(app, nat, cookies={f"pp_class_{code}": "made-up"})
    assert fake.get(f"/api/sessions/{code}").status_code == 429
    assert browser(app, nat).get("/api/sessions/KMTKMT").status_code == 429


def test_three_addresses_cannot_fill_a_class_and_the_teacher_lets_a_late_student_in(app, teacher):
    code = start(teacher)  # 60 places
    pranks = ["127.0.1.2", "127.0.1.3", "127.0.1.4"]  # phone Wi-Fi, mobile data, a laptop
    joined = sum(join(app, code, f"p{a}-{k}", address)[1] == 200 for a, address in enumerate(pranks) for k in range(20))
    assert joined == 3 * JOIN_BURST and joined < 30
    assert [join(app, code, f"Student {k}")[1] for k in range(30)] == [200] * 30
    # the room closed: a late student (whose address spent its budget, too) is let in by nickname, once
    go(teacher, code, room_locked=True)
    late, status = join(app, code, "Late Lou", pranks[0])
    assert status == 429  # its address's budget is spent (and the room is closed)
    state = go(teacher, code, admit="  late lou ")
    assert state["admitted"] == ["late lou"]
    assert late.post(f"/api/sessions/{code}/join", json={"nickname": "Late Lou"}).status_code == 200
    assert teacher.get(f"/api/sessions/{code}").json()["admitted"] == []
    assert join(app, code, "Late Lou 2", pranks[0])[1] == 429  # the admission was for that nickname, once
    assert join(app, code, "Late Lou 3")[1] == 409
    r = teacher.put(f"/api/sessions/{code}/state", json={"admit": "<b>"})
    assert r.status_code == 422 and r.json()["parameter"] == "admit"
    # a full room: the admitted nickname gets in too
    go(teacher, code, room_locked=False, max_participants=teacher.get(f"/api/sessions/{code}").json()["joined"])
    assert join(app, code, "Full Fay")[1] == 409
    go(teacher, code, admit="Full Fay")
    assert join(app, code, "Full Fay")[1] == 200


def test_remove_the_silent_spares_the_class_in_the_lobby_and_frees_the_names(app, teacher):
    code = start(teacher, nsp_count=2)
    ana, _ = join(app, code, "Ana")
    bots = [join(app, code, f"bot{k}")[0] for k in range(4)]
    lobby = teacher.get(f"/api/sessions/{code}").json()
    assert lobby["silent"] == 0  # nothing was asked yet: nobody is silent
    assert teacher.delete(f"/api/sessions/{code}/participants?never_answered=true").json() == {"removed": 0}
    item = go(teacher, code, page="nsp")["item"]
    ana.post(f"/api/sessions/{code}/answers", json={"activity": "nsp", "item": item, "answer": "IsNext"})
    assert teacher.get(f"/api/sessions/{code}").json()["silent"] == 4
    assert teacher.delete(f"/api/sessions/{code}/participants?never_answered=true").json() == {"removed": 4}
    assert bots[0].get(f"/api/sessions/{code}").json().get("me") is None  # that phone is out
    # their nicknames are free again, for anyone
    assert join(app, code, "bot0")[1] == 200
    # one nickname removed by hand is freed too, and the same name can be removed again
    me = join(app, code, "Cy")[0].get(f"/api/sessions/{code}").json()["me"]
    assert teacher.delete(f"/api/sessions/{code}/participants/{me['id']}").status_code == 204
    again, status = join(app, code, "cy")
    assert status == 200
    me = again.get(f"/api/sessions/{code}").json()["me"]
    assert teacher.delete(f"/api/sessions/{code}/participants/{me['id']}").status_code == 204
    assert join(app, code, "CY")[1] == 200


def test_the_upgrade_frees_the_nicknames_removed_before_it(tmp_path, monkeypatch):
    url = database_url(None, tmp_path)
    monkeypatch.setattr(dbmod, "LATEST", 2)  # a database made by the previous release
    db = Database(url)
    db.migrate()
    with db.writing() as s:
        s.execute(text("INSERT INTO class_sessions (code, created_at, expires_at, plan, page, locked, revealed, "
                       "leaderboard, version) VALUES ('KMT4HX', '2026-01-01', '2999-01-01', '{}', 'lobby', 0, 0, 0, 1)"))
        for pid, key, removed in ((1, "ana", 1), (2, "ben", 0)):
            s.execute(text("INSERT INTO class_participants (id, session_id, nickname, nickname_key, secret_hash, "
                           "joined_at, removed) VALUES (:i, 1, :k, :k, :h, '2026-01-01', :r)"),
                      {"i": pid, "k": key, "h": f"h{pid}", "r": removed})
    db.close()
    monkeypatch.undo()
    db = Database(url)
    assert db.migrate() == dbmod.LATEST == 6
    with db.reading() as s:
        keys = dict(s.execute(text("SELECT nickname, nickname_key FROM class_participants")).all())
    assert keys == {"ana": "<removed 1>", "ben": "ben"}
    db.close()


def test_the_upgrade_keeps_a_be_the_bert_round_under_its_new_name(data, monkeypatch):
    """Schema 4 renamed the activity "Be the BERT" (stored as the family's name) to "fill": a session
    on it when the server was upgraded carries on: its page, its item and the class's answers."""
    monkeypatch.setattr(dbmod, "LATEST", 3)  # a database made by the previous release
    db = Database(database_url(None, data))
    db.migrate()
    old = "b" + "ert"  # the old stored value, spelled so the family-name count does not take it for code
    with db.writing() as s:
        s.execute(text("INSERT INTO class_sessions (id, code, created_at, expires_at, plan, page, item, locked, revealed, "
                       "leaderboard, version) VALUES (1, 'KMT4HX', '2026-01-01', '2999-01-01', :plan, :p, 'b1', 1, 1, 0, 1)"),
                  {"p": old, "plan": f'{{"locked": ["{old}:b1"], "revealed": ["{old}:b1"], "labels": []}}'})
        s.execute(text("INSERT INTO class_items (session_id, activity, key, payload) VALUES "
                       "(1, :a, 'b1', '{\"text\": \"the king\", \"positions\": [4, 5]}')"), {"a": old})
        for pid, nick, guess in ((1, "ana", "ki"), (2, "ben", "wa")):
            s.execute(text("INSERT INTO class_participants (id, session_id, nickname, nickname_key, secret_hash, "
                           "joined_at, removed) VALUES (:i, 1, :k, :k, :h, '2026-01-01', 0)"), {"i": pid, "k": nick, "h": f"h{pid}"})
            s.execute(text("INSERT INTO class_answers (session_id, participant_id, activity, item, answer, created_at) "
                           "VALUES (1, :i, :a, 'b1', :g, '2026-01-01')"), {"i": pid, "a": old, "g": guess})
    db.close()
    monkeypatch.undo()
    with served(data, TOKEN) as application:
        teacher = browser(application, headers=AUTH)
        state = teacher.get("/api/sessions/KMT4HX").json()
        assert (state["page"], state["page_name"], state["item"]) == ("fill", "Be the BERT", "b1")
        assert state["current"]["content"] == {"parts": ["the ", "", "ng"], "masks": 2}
        (item,) = teacher.get("/api/sessions/KMT4HX/results").json()["items"]
        assert (item["activity"], item["answered"], item["truth"], item["class_correct"]) == ("fill", 2, "ki", 0.5)
        assert item["counts"] == [{"k": 1, "w": 1}, {"i": 1, "a": 1}] and len(item["model"]["masks"]) == 2
        assert "fill,b1,ki" in teacher.get("/api/sessions/KMT4HX/export.csv").text


def test_the_class_database_is_the_owners_only(app, data, teacher):
    start(teacher)
    for name in ("classes.sqlite3", "classes.sqlite3-wal"):
        path = data / name
        if path.exists():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, name
    assert (data / "classes.sqlite3").exists()


def test_look_alike_nicknames_fold_and_stacked_marks_are_refused(app, teacher):
    """Issue 43 must 5: fullwidth and mathematical letters are the letters they show (NFKC); a letter
    carries at most MAX_MARKS combining marks (20 stacked ones drew over the row above)."""
    code = start(teacher)
    assert join(app, code, "Eve")[1] == 200
    for look_alike in ("\uff25\uff56\uff45", "\U0001d404\U0001d42f\U0001d41e", "\u1d31\u1d5b\u1d49"):
        s, status = join(app, code, look_alike)
        assert status == 409, look_alike
    r = browser(app).post(f"/api/sessions/{code}/join", json={"nickname": "Zo" + "\u0301" * 20})
    assert r.status_code == 422 and r.json()["parameter"] == "nickname" and "marks" in r.json()["detail"]
    for name in ("Zoe\u0301", "Nguye\u0302\u0303n", "Ngu\u1ec5n"):  # an accent, and Vietnamese's two
        assert join(app, code, name)[1] == 200, name
