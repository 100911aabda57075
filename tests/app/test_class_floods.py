"""Issue 24: one student (one address) must not lock the class or the teacher out.

Each test reproduces an attack of the issue against the real app (TestClient, each browser with
its own client address, as phones on a school network have) and checks the class is served:
a join flood, removal freeing places, the room lock, removing the nicknames that never answered,
join-code guessing, the wrong-token budget per address with its global ceiling, a stale
instructor cookie, and a full database disk."""
from __future__ import annotations

import itertools
import subprocess
import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from app.classes.codes import ALPHABET
from app.classes.guard import JOIN_BURST, JOIN_EVERY_S
from app.config import Settings
from app.main import create_app
from tests.app.class_kit import browser, join, served, start
from tests.conftest import SHIPPED_MODELS

# every budget here runs on a standing clock (tests/conftest.py): no test depends on the machine's speed
pytestmark = pytest.mark.usefixtures("standing_clock")

TOKEN = "flood-teacher-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def app(tmp_path):
    with served(tmp_path / "data", TOKEN) as application:
        yield application


@pytest.fixture
def teacher(app):
    return browser(app, "127.0.0.1", headers=AUTH)


def test_a_join_flood_from_one_address_leaves_room_for_the_class(app, teacher):
    code = start(teacher)
    assert teacher.get(f"/api/sessions/{code}").json()["max_participants"] == 60  # a class, not 1,000
    flood = browser(app, "127.0.0.2")
    statuses, t0 = [], time.monotonic()
    for k in range(300):  # a script: no cookie kept, a new made-up nickname each time
        flood.cookies.clear()
        statuses.append(flood.post(f"/api/sessions/{code}/join", json={"nickname": f"bot{k}"}))
    flood.cookies.clear()
    bot = browser(app, "127.0.0.2")
    assert bot.post(f"/api/sessions/{code}/join", json={"nickname": "bot-x"}).status_code == 429
    codes = [r.status_code for r in statuses]
    elapsed = time.monotonic() - t0  # JOIN_BURST at once, then one per JOIN_EVERY_S
    assert codes.count(200) <= JOIN_BURST + elapsed / JOIN_EVERY_S + 1 and set(codes) == {200, 429}, (elapsed, codes)
    assert codes[:JOIN_BURST] == [200] * JOIN_BURST and codes.count(429) >= 200
    last = statuses[-1]
    assert last.json()["parameter"] == "nickname" and int(last.headers["retry-after"]) >= 1
    # 30 students, each from its own address, all join
    assert [join(app, code, f"Student {k}")[1] for k in range(30)] == [200] * 30
    assert teacher.get(f"/api/sessions/{code}").json()["joined"] == codes.count(200) + 30
    # a browser that joined from that address (its cookie) still gets its nickname back: no budget needed
    first = browser(app, "127.0.0.2", cookies={f"pp_class_{code}": statuses[0].cookies[f"pp_class_{code}"]})
    assert first.post(f"/api/sessions/{code}/join", json={"nickname": "x"}).json()["nickname"] == "bot0"


def test_removed_nicknames_free_their_places_and_the_teacher_sets_the_size(app, teacher):
    code = start(teacher, max_participants=2)
    a, _ = join(app, code, "Ana")
    join(app, code, "Ben")
    r = browser(app).post(f"/api/sessions/{code}/join", json={"nickname": "Cy"})
    assert r.status_code == 409 and "full (2 students)" in r.json()["detail"]
    ana = a.get(f"/api/sessions/{code}").json()["me"]["id"]
    assert teacher.delete(f"/api/sessions/{code}/participants/{ana}").status_code == 204
    assert join(app, code, "Cy")[1] == 200  # Ana's place is free again
    assert join(app, code, "Di")[1] == 409
    assert teacher.put(f"/api/sessions/{code}/state", json={"max_participants": 3}).json()["max_participants"] == 3
    assert join(app, code, "Di")[1] == 200
    for bad in (0, 1001, "x"):
        r = teacher.post("/api/sessions", json={"max_participants": bad})
        assert r.status_code == 422 and r.json()["parameter"] == "max_participants"


def test_the_teacher_locks_the_room(app, teacher):
    code = start(teacher)
    ana, _ = join(app, code, "Ana")
    state = teacher.put(f"/api/sessions/{code}/state", json={"room_locked": True}).json()
    assert state["room_locked"] is True
    r = browser(app).post(f"/api/sessions/{code}/join", json={"nickname": "Late"})
    assert r.status_code == 409 and r.json()["parameter"] == "code" and "closed" in r.json()["detail"]
    # a student already in gets back in (a reload), and still answers
    assert ana.post(f"/api/sessions/{code}/join", json={"nickname": "Ana"}).status_code == 200
    item = teacher.put(f"/api/sessions/{code}/state", json={"page": "nsp"}).json()["item"]
    assert ana.post(f"/api/sessions/{code}/answers",
                    json={"activity": "nsp", "item": item, "answer": "IsNext"}).status_code == 201
    assert teacher.put(f"/api/sessions/{code}/state", json={"room_locked": False}).json()["room_locked"] is False
    assert join(app, code, "Late")[1] == 200


def test_one_call_removes_the_nicknames_that_never_answered(app, teacher):
    code = start(teacher, max_participants=5)
    ana, _ = join(app, code, "Ana")
    for k in range(4):
        join(app, code, f"bot{k}")
    assert join(app, code, "Ben")[1] == 409  # full
    item = teacher.put(f"/api/sessions/{code}/state", json={"page": "nsp"}).json()["item"]
    ana.post(f"/api/sessions/{code}/answers", json={"activity": "nsp", "item": item, "answer": "IsNext"})
    assert browser(app).delete(f"/api/sessions/{code}/participants?never_answered=true").status_code == 401
    r = teacher.delete(f"/api/sessions/{code}/participants?never_answered=false")
    assert r.status_code == 422 and r.json()["parameter"] == "never_answered"
    r = teacher.delete(f"/api/sessions/{code}/participants?never_answered=true")
    assert r.status_code == 200 and r.json() == {"removed": 4}
    state = teacher.get(f"/api/sessions/{code}").json()
    assert [p["nickname"] for p in state["participants"]] == ["Ana"] and state["joined"] == 1
    assert join(app, code, "Ben")[1] == 200  # joined after the class answered: not silent (yet)
    assert teacher.delete(f"/api/sessions/{code}/participants?never_answered=true").json() == {"removed": 0}


def test_join_code_guesses_are_limited_per_address(app, teacher):
    code = start(teacher)
    guesser = browser(app, "127.0.0.2")
    wrong = (c for c in ("".join(p) for p in itertools.product(ALPHABET, repeat=6)) if c != code)
    answers = [guesser.get(f"/api/sessions/{next(wrong)}") for _ in range(30)]
    assert [a.status_code for a in answers] == [404] * 20 + [429] * 10
    assert answers[-1].json()["parameter"] == "code" and int(answers[-1].headers["retry-after"]) >= 1
    # spent: even the right code is refused to that address (it learns nothing), on every student route
    assert guesser.get(f"/api/sessions/{code}").status_code == 429
    assert guesser.post(f"/api/sessions/{code}/join", json={"nickname": "g"}).status_code == 429
    # everyone else, and the right code, is served
    assert join(app, code, "Ana")[1] == 200
    assert browser(app).get(f"/api/sessions/{code}").status_code == 200


def test_rejoin_code_guesses_share_the_address_budget(app, teacher):
    """A nickname's rejoin code (6 characters) cannot be guessed faster than a join code: every
    wrong one from an address is one of its guesses."""
    code = start(teacher)
    owner, status = join(app, code, "Ana")
    assert status == 200
    right = owner.get(f"/api/sessions/{code}").json()["me"]["rejoin_code"]
    guesser = browser(app, "127.0.0.3")
    wrong = (c for c in ("".join(p) for p in itertools.product(ALPHABET, repeat=6)) if c != right)
    statuses = [guesser.post(f"/api/sessions/{code}/join", json={"nickname": "Ana", "rejoin": next(wrong)}).status_code
                for _ in range(24)]
    assert statuses == [404] * 20 + [429] * 4, statuses
    # spent: even the right rejoin code is refused to that address; the owner's own browser still gets in
    assert guesser.post(f"/api/sessions/{code}/join", json={"nickname": "Ana", "rejoin": right}).status_code == 429
    assert owner.get(f"/api/sessions/{code}").status_code == 200


def test_wrong_tokens_are_budgeted_per_address_and_the_teacher_always_gets_in(app):
    guesser = browser(app, "127.0.0.2")
    statuses = [guesser.get("/api/sessions", headers={"Authorization": f"Bearer guess-{i}"}).status_code
                for i in range(14)]
    assert statuses == [403] * 10 + [429] * 4, statuses
    # its own budget is spent: wrong ones are refused at once, but the right token is never refused (issue 53)
    assert guesser.get("/api/sessions", headers={"Authorization": "Bearer guess-x"}).status_code == 429
    assert guesser.get("/api/sessions", headers=AUTH).status_code == 200
    # the teacher's address: the right token answers at once, every time
    teacher = browser(app, "127.0.0.1", headers=AUTH)
    assert [teacher.get("/api/sessions").status_code for _ in range(50)] == [200] * 50
    # a logged-in browser on the guesser's own address is never counted
    own = {"Sec-Fetch-Site": "same-origin"}
    login = browser(app, "127.0.0.2").post("/login", data={"token": TOKEN}, headers=own, follow_redirects=False)
    assert login.status_code == 303  # the right token logs in whatever the address spent
    wrong = browser(app, "127.0.0.2").post("/login", data={"token": "guess"}, headers=own, follow_redirects=False)
    assert wrong.status_code == 429  # a wrong one through the login form waits like a wrong Bearer
    logged_in = browser(app, "127.0.0.2", cookies={"pp_instructor": login.cookies["pp_instructor"]})
    assert logged_in.get("/api/sessions", headers=own).status_code == 200


def test_the_global_ceiling_never_refuses_a_quiet_address(app):
    for k in range(7):  # 70 wrong tokens from 7 addresses: over the global ceiling of 60
        c = browser(app)
        for i in range(10):
            c.get("/api/sessions", headers={"Authorization": f"Bearer g{k}-{i}"})
    once = browser(app)  # an address with one wrong token: it waits for the ceiling
    assert once.get("/api/sessions", headers={"Authorization": "Bearer typo"}).status_code in (403, 429)
    assert once.get("/api/sessions", headers={"Authorization": "Bearer typo2"}).status_code == 429
    # a quiet address is checked whatever the ceiling: the right token works, a wrong one is a 403
    assert browser(app, headers=AUTH).get("/api/sessions").status_code == 200
    assert browser(app).get("/api/sessions", headers={"Authorization": "Bearer wrong"}).status_code == 403


def test_a_stale_instructor_cookie_spends_nobody_budget(app):
    old = browser(app, "127.0.0.2", cookies={"pp_instructor": "a-cookie-from-before-the-token-changed"})
    answers = [old.get("/api/sessions") for _ in range(30)]
    assert {a.status_code for a in answers} == {403} and "log in again" in answers[0].json()["detail"]
    # nothing was spent: the same address still gets its full budget of token checks, and the right one
    assert browser(app, "127.0.0.2", headers=AUTH).get("/api/sessions").status_code == 200
    # students on that address read the class state as usual (the cookie only makes them not the teacher)
    teacher = browser(app, "127.0.0.1", headers=AUTH)
    code = start(teacher)
    assert old.get(f"/api/sessions/{code}").status_code == 200


def test_a_full_database_disk_is_a_clear_503(app, teacher):
    code = start(teacher)
    ana, _ = join(app, code, "Ana")
    db = app.state.classes.db
    with db.reading() as s:
        pages = s.connection().exec_driver_sql("PRAGMA page_count").scalar()

    def full(dbapi_conn, _record):  # the database may not grow by one page more: SQLITE_FULL
        dbapi_conn.execute(f"PRAGMA max_page_count={pages}")

    event.listen(db.engine, "connect", full)
    db.engine.dispose()
    try:
        lines = [f"line {k} " + "x" * 400 for k in range(100)]
        answers = {
            "new session": teacher.post("/api/sessions", json={"labels": ["a", "b"], "lines": lines}),
            "join": [browser(app).post(f"/api/sessions/{code}/join", json={"nickname": "N" * 20 + str(k)})
                     for k in range(40)][-1],
        }
        for what, r in answers.items():
            assert r.status_code == 503, (what, r.status_code, r.text)
            assert "disk is full" in r.json()["detail"] and r.headers["retry-after"], what
            assert "/" not in r.json()["detail"], what  # no path
        assert ana.get(f"/api/sessions/{code}").status_code == 200  # reading still works
    finally:
        event.remove(db.engine, "connect", full)
        db.engine.dispose()


def test_a_full_data_disk_answers_503_or_serves_never_500(tmp_path, caplog):
    """The data folder on a real full disk (a small tmpfs, filled): every class write answers at
    once, either done (SQLite reuses its journal's space) or a 503 saying the disk is full; no 500,
    no traceback in the log."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        application = create_app(Settings(models_dir=SHIPPED_MODELS, data_dir=mount, instructor_token=TOKEN))
        with TestClient(application):
            teacher = browser(application, "127.0.0.1", headers=AUTH)
            code = start(teacher)
            ana, _ = join(application, code, "Ana")
            with open(mount / "filler", "wb") as f:
                try:
                    while True:
                        f.write(b"\0" * 65536)
                except OSError:
                    pass
            seen = []
            for k in range(30):
                seen.append(("join", browser(application).post(f"/api/sessions/{code}/join",
                                                              json={"nickname": f"Student {k} " + "y" * 10})))
                seen.append(("state", teacher.put(f"/api/sessions/{code}/state",
                                                  json={"page": "nsp" if k % 2 else "concept"})))
                item = ana.get(f"/api/sessions/{code}").json().get("item")
                seen.append(("answer", ana.post(f"/api/sessions/{code}/answers",
                                                json={"activity": "nsp", "item": item or "x", "answer": "IsNext"})))
                seen.append(("new session", teacher.post("/api/sessions", json={"lines": ["z" * 400] * 50,
                                                                                  "labels": ["a", "b"]})))
            statuses = {(what, r.status_code) for what, r in seen}
            assert not [x for x in statuses if x[1] >= 500 and x[1] != 503], statuses
            assert ("join", 503) in statuses and ("new session", 503) in statuses, statuses
            full = next(r for what, r in seen if r.status_code == 503)
            assert "disk is full" in full.json()["detail"] and full.headers["retry-after"]
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL") or r.exc_info], \
        [r.getMessage() for r in caplog.records if r.exc_info][:3]


def test_exported_cells_are_never_formulas_nor_raw_control_characters(app, teacher):
    from app.classes.cells import neutral

    assert [neutral(x) for x in ("=1+2", "+1", "-1", "@SUM(A1)", "\tx", "\rx", "ok", 3, True)] == \
        ["'=1+2", "'+1", "'-1", "'@SUM(A1)", "'\\x09x", "'\\x0dx", "ok", 3, True]
    assert neutral("a\nb\x00c\x1bd\x85e") == "a\\x0ab\\x00c\\x1bd\\x85e"
    code = start(teacher)
    names = ["=1+2", "@SUM(1)", "-2+3", "+x", "Ana"]
    students = [join(app, code, n)[0] for n in names]
    item = teacher.put(f"/api/sessions/{code}/state", json={"page": "nsp"}).json()["item"]
    for s in students:
        assert s.post(f"/api/sessions/{code}/answers", json={"activity": "nsp", "item": item,
                                                             "answer": "IsNext"}).status_code == 201
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(teacher.get(f"/api/sessions/{code}/export.csv").text)))
    assert sorted(r["nickname"] for r in rows) == sorted(["'=1+2", "'@SUM(1)", "'-2+3", "'+x", "Ana"])
    assert all(not r[k][:1] in "=+-@\t\r" for r in rows for k in r)


def test_the_quiz_routes_do_not_reveal_the_item_a_class_is_answering(app, teacher):
    from app.classes import embargo

    code = start(teacher, nsp_count=2)
    state = teacher.put(f"/api/sessions/{code}/state", json={"page": "nsp"}).json()
    item, other = state["item"], state["items"]["nsp"][1]["item"]
    embargo._cache.clear()
    s = browser(app)
    r = s.post(f"/api/nsp/quiz/{item}/answer", json={"guess": "IsNext"})
    assert r.status_code == 409 and r.json()["parameter"] == "id" and "truth" not in r.json()
    assert s.post(f"/api/nsp/quiz/{other}/answer", json={"guess": "IsNext"}).status_code == 409  # the next one too (issue 43)
    teacher.put(f"/api/sessions/{code}/state", json={"revealed": True})
    embargo._cache.clear()
    assert s.post(f"/api/nsp/quiz/{item}/answer", json={"guess": "IsNext"}).status_code == 200
    question = teacher.put(f"/api/sessions/{code}/state", json={"page": "concept"}).json()["item"]
    embargo._cache.clear()
    r = s.post(f"/api/concepts/{question}/answer", json={"choice": 0})
    assert r.status_code == 409 and "explanation" not in r.json()
    teacher.put(f"/api/sessions/{code}/state", json={"ended": True})
    embargo._cache.clear()
    assert s.post(f"/api/concepts/{question}/answer", json={"choice": 0}).status_code == 200


def test_invisible_and_look_alike_nicknames_are_refused(app, teacher):
    code = start(teacher)
    assert join(app, code, "Eve")[1] == 200
    for name in ("\u3164", "a\u3164", "\u115f", "\u2800", "x\u034fy", "\ufe0f", "\u0301"):
        r = browser(app).post(f"/api/sessions/{code}/join", json={"nickname": name})
        assert r.status_code == 422 and r.json()["parameter"] == "nickname", (name, r.text)
    r = browser(app).post(f"/api/sessions/{code}/join", json={"nickname": "\u0415ve"})  # Cyrillic Е
    assert r.status_code == 409 and r.json()["parameter"] == "nickname"
    assert join(app, code, "Мария")[1] == 200 and join(app, code, "Zoë")[1] == 200
