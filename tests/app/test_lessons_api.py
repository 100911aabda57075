"""Issue 50 musts 1, 2 and 4 over HTTP: lessons saved, read, changed, deleted, exported and imported
(the shipped one included); a bad file is a 422 naming the field's path and stores nothing; the
schema migration adds the lessons table to an older database."""
from __future__ import annotations

import copy
import json

import pytest
from sqlalchemy import text

from app.classes import db as dbmod
from app.lessons import store
from tests.app.class_kit import browser, served

TOKEN = "lessons-api-teacher"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SHIPPED_ID = "what-pretraining-is"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with served(tmp_path_factory.mktemp("lessons"), TOKEN) as application:
        yield application


@pytest.fixture
def teacher(app):
    return browser(app, "127.0.0.1", headers=AUTH)


def shipped_file() -> dict:
    return json.loads((store.SHIPPED / f"{SHIPPED_ID}.json").read_text(encoding="utf-8"))


def test_the_shipped_lesson_is_listed_and_its_file_round_trips_through_post(teacher):
    listed = {x["id"]: x for x in teacher.get("/api/lessons").json()}
    assert listed[SHIPPED_ID]["shipped"] is True and listed[SHIPPED_ID]["title"] == "What pretraining is"
    exported = teacher.get(f"/api/lessons/{SHIPPED_ID}?download=true")
    assert exported.status_code == 200 and "attachment" in exported.headers["content-disposition"]
    body = exported.json()
    assert body["format"] == "pretraining-playground.lesson" and body["version"] == 1
    made = teacher.post("/api/lessons", json=body)
    assert made.status_code == 201, made.text
    again = teacher.get(f"/api/lessons/{made.json()['id']}").json()
    assert again == body  # stages and settings, equal
    assert again["stages"] == shipped_file()["stages"]


def test_the_shipped_lesson_follows_the_storyline_and_fits_45_minutes():
    lesson = shipped_file()
    kinds = [s["kind"] for s in lesson["stages"]]
    assert kinds[0] == "fill" and kinds[-1] == "label"  # be the BERT first; label together (then the fine-tune) last
    assert {"nsp", "concept"} <= set(kinds)
    pages = [s.get("page") for s in lesson["stages"] if s["kind"] == "applet"]
    assert "/generate" in pages and "/attention" in pages and "/mask-fill" in pages
    demo = next(s for s in lesson["stages"] if s.get("page") == "/generate" and s["state"].get("top_k"))
    assert demo["state"]["temperature"] != 1  # the temperature and top-k demo
    assert 40 <= lesson["minutes"] <= 50


def test_a_lesson_is_changed_and_deleted_and_a_shipped_one_is_not(teacher):
    body = shipped_file()
    lesson_id = teacher.post("/api/lessons", json=body).json()["id"]
    changed = copy.deepcopy(body)
    changed["title"] = "Pretraining, short"
    changed["stages"] = changed["stages"][:2][::-1]  # reordered and cut
    assert teacher.put(f"/api/lessons/{lesson_id}", json=changed).status_code == 200
    assert teacher.get(f"/api/lessons/{lesson_id}").json()["stages"] == changed["stages"]
    assert any(x["id"] == lesson_id and x["stages"] == 2 for x in teacher.get("/api/lessons").json())
    refused = teacher.put(f"/api/lessons/{SHIPPED_ID}", json=changed)
    assert refused.status_code == 409 and refused.json()["parameter"] == "id"
    assert teacher.delete(f"/api/lessons/{SHIPPED_ID}").status_code == 409
    assert teacher.delete(f"/api/lessons/{lesson_id}").status_code == 204
    gone = teacher.get(f"/api/lessons/{lesson_id}")
    assert gone.status_code == 404 and gone.json()["parameter"] == "id"
    for odd in ("²", "0x1", "１", "9" * 13):  # digits to str.isdigit, not to int(): a 404, never a 500
        assert teacher.get(f"/api/lessons/{odd}").status_code == 404


@pytest.mark.parametrize("mend, parameter", [
    (lambda b: b["stages"][0]["items"][0].update(positions=[500]), "stages[0].items[0].positions"),
    (lambda b: b["stages"][0]["items"][0].update(positions=[2]), "stages[0].items[0].positions"),  # a space
    (lambda b: b["stages"][1].update(page="/train"), "stages[1].page"),
    (lambda b: b["stages"][1]["state"].update(projector="1"), "stages[1].state"),
    (lambda b: b["stages"][1]["state"].update({"Bad Key": 1}), "stages[1].state"),
    (lambda b: b["stages"][6].update(seed=None), "stages[6].seed"),
    (lambda b: b["stages"][6].update(items=["not-a-pair"]), "stages[6].items"),
    (lambda b: b["stages"][7]["questions"].append("no-such-question"), "stages[7].questions[6]"),
    (lambda b: b["stages"][8].update(labels=["happy"]), "stages[8].labels"),
    (lambda b: b["stages"].append(copy.deepcopy(b["stages"][8])), "stages"),
    (lambda b: b["stages"][2].update(kind="video"), "stages[2].kind"),
    (lambda b: b["stages"][2].update(colour="red"), "stages[2].colour"),
    (lambda b: b.update(version=2), "version"),
    (lambda b: b.update(format="something-else"), "format"),
    (lambda b: b.update(stages=[]), "stages"),
    (lambda b: b.pop("title"), "title"),
])
def test_a_bad_file_is_a_422_naming_the_field_and_stores_nothing(teacher, mend, parameter):
    before = teacher.get("/api/lessons").json()
    body = shipped_file()
    mend(body)
    r = teacher.post("/api/lessons", json=body)
    assert r.status_code == 422, r.text
    said = r.json()
    assert said["parameter"] is not None and said["parameter"].startswith(parameter), said
    assert said["detail"].startswith(said["parameter"]), said  # the sentence names the field it is about
    assert teacher.get("/api/lessons").json() == before


def test_not_json_and_not_an_object_are_refused_in_words(teacher):
    r = teacher.post("/api/lessons", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and "JSON" in r.json()["detail"]
    r = teacher.post("/api/lessons", json=[1, 2])
    assert r.status_code == 422 and "object" in r.json()["detail"]


def test_only_the_instructor_reaches_lessons(app):
    stranger = browser(app)
    assert stranger.get("/api/lessons").status_code == 401
    assert stranger.get(f"/api/lessons/{SHIPPED_ID}").status_code == 401
    assert stranger.post("/api/lessons", json=shipped_file()).status_code == 401
    assert stranger.delete("/api/lessons/1").status_code == 401


def test_an_older_database_gains_the_lessons_table_and_keeps_its_sessions(tmp_path):
    db = dbmod.Database(f"sqlite:///{tmp_path / 'old.sqlite3'}")
    with db.engine.begin() as conn:  # a version-4 database: today's tables but lessons, one session in it
        dbmod.Base.metadata.create_all(conn, tables=[t for name, t in dbmod.Base.metadata.tables.items() if name != "lessons"])
        conn.execute(text("CREATE TABLE schema_version (version INTEGER NOT NULL)"))
        conn.execute(text("INSERT INTO schema_version (version) VALUES (4)"))
        conn.execute(text("INSERT INTO class_sessions (code, created_at, expires_at, plan, page, locked, revealed, "
                          "leaderboard, version, max_participants, joins_locked) VALUES ('ABCDEF', '2026-01-01', "
                          "'2099-01-01', '{}', 'lobby', 0, 0, 0, 1, 60, 0)"))
    assert db.migrate() == dbmod.LATEST == 6
    assert store.listing(db)[-1]["shipped"]  # the table is there (and empty)
    with db.engine.begin() as conn:
        assert conn.execute(text("SELECT code FROM class_sessions")).scalar() == "ABCDEF"
    db.close()
