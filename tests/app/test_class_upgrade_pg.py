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
