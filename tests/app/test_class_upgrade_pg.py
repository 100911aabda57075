"""Schema 4 (the activity "Be the BERT" renamed to "fill") on PostgreSQL's JSON column: the SQLite
side is tests/app/test_class_room.py; the throwaway cluster is test_classes_db.py's fixture."""
from __future__ import annotations

import pytest
from sqlalchemy import text

from app.classes import db as dbmod
from app.classes.db import Database, database_url
from tests.app.test_classes_db import postgres_url  # noqa: F401 (the fixture)


@pytest.mark.slow
def test_postgresql_upgrade_renames_an_activity_in_the_plans_json(postgres_url, tmp_path):
    """Schema 4's step (the activity "Be the BERT" renamed) on PostgreSQL's JSON column."""
    db = Database(database_url(postgres_url, tmp_path))
    db.migrate()
    old = "b" + "ert"
    with db.engine.begin() as conn:
        conn.execute(text("INSERT INTO class_sessions (code, created_at, expires_at, plan, page, locked, revealed, "
                          "leaderboard, version, max_participants, joins_locked) VALUES ('PGUP4X', now(), now(), "
                          "CAST(:plan AS JSON), :p, false, false, false, 1, 60, false)"),
                     {"p": old, "plan": f'{{"revealed": ["{old}:b1", "nsp:q1"], "labels": ["a"]}}'})
        dbmod.renamed_activity(conn, old, "fill")
        page, plan = conn.execute(text("SELECT page, plan FROM class_sessions WHERE code = 'PGUP4X'")).one()
        conn.execute(text("DELETE FROM class_sessions WHERE code = 'PGUP4X'"))
    assert page == "fill" and plan == {"revealed": ["fill:b1", "nsp:q1"], "labels": ["a"]}
    db.close()


@pytest.mark.slow
def test_postgresql_upgrade_adds_the_lessons_table_and_keeps_a_lesson_whole(postgres_url, tmp_path):
    """Schema 5 (lessons beside the sessions) on PostgreSQL: a version-4 database gains the table, and a
    lesson is saved, read back equal, replaced and deleted there."""
    import json

    from app.lessons import checks, store

    db = Database(database_url(postgres_url, tmp_path))
    db.migrate()
    with db.engine.begin() as conn:  # as the previous release left it: no lessons table, version 4
        conn.execute(text("DROP TABLE lessons"))
        conn.execute(text("UPDATE schema_version SET version = 4"))
    assert db.migrate() == dbmod.LATEST == 6
    body = json.loads((store.SHIPPED / "what-pretraining-is.json").read_text(encoding="utf-8"))
    lesson_id = store.add(db, checks.parse(body))
    assert store.get(db, lesson_id) == (body, False)
    shorter = {**body, "title": "Short", "stages": body["stages"][:2]}
    store.replace(db, lesson_id, checks.parse(shorter))
    assert store.get(db, lesson_id)[0] == shorter
    store.remove(db, lesson_id)
    assert all(x["id"] != lesson_id for x in store.listing(db))
    db.close()
