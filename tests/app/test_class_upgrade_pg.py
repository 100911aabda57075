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


@pytest.mark.slow
def test_postgresql_upgrade_gives_stored_nicknames_their_look_alike_keys(postgres_url, tmp_path):
    """Schema 6's step (issue 53 must 4) on PostgreSQL: keys recomputed, a collision kept with "<id>",
    a removed one's key kept, a let-in list of bare keys turned into entries."""
    db = Database(database_url(postgres_url, tmp_path))
    db.migrate()
    with db.engine.begin() as conn:
        sid = conn.execute(text("INSERT INTO class_sessions (code, created_at, expires_at, plan, page, locked, revealed, "
                                "leaderboard, version, max_participants, joins_locked) VALUES ('PGUP6X', now(), now(), "
                                "CAST('{\"admit\": [\"late lou\"]}' AS JSON), 'lobby', false, false, false, 1, 60, false) "
                                "RETURNING id")).scalar()
        ids = [conn.execute(text("INSERT INTO class_participants (session_id, nickname, nickname_key, secret_hash, "
                                 "joined_at, removed) VALUES (:s, :n, :k, :h, now(), :r) RETURNING id"),
                            {"s": sid, "n": n, "k": k, "h": f"h{n}", "r": r}).scalar()
               for n, k, r in (("Ana", "ana-old", True), ("Zoe", "zoe", False), ("Z0E", "z0e", False))]
        conn.execute(text("UPDATE class_participants SET nickname_key = '<removed ' || CAST(id AS VARCHAR(20)) || '>' "
                          "WHERE id = :i"), {"i": ids[0]})
        dbmod.lookalike_keys(conn)
        keys = dict(conn.execute(text("SELECT id, nickname_key FROM class_participants WHERE session_id = :s"),
                                 {"s": sid}).all())
        plan = conn.execute(text("SELECT plan FROM class_sessions WHERE id = :s"), {"s": sid}).scalar()
        conn.execute(text("DELETE FROM class_participants WHERE session_id = :s"), {"s": sid})
        conn.execute(text("DELETE FROM class_sessions WHERE id = :s"), {"s": sid})
    assert keys == {ids[0]: f"<removed {ids[0]}>", ids[1]: "zoe", ids[2]: f"zoe<{ids[2]}>"}
    assert plan["admit"] == [{"name": "late lou", "key": "late lou", "any": True}]
    db.close()
