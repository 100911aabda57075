"""The class-session database: the engine (SQLite in the data folder by default, or any
PostgreSQL URL through psycopg 3), sessions for reading and for writing, and the versioned schema.

SQLite, several workers on one file:
- WAL journal: readers never wait for the writer, and the writer does not wait for readers;
- busy_timeout: a writer waits up to BUSY_TIMEOUT_MS for another process's write to finish;
- writes begin with BEGIN IMMEDIATE (`writing()`), taking the write lock up front, so that two
  transactions that both read then write cannot deadlock (SQLite would fail one at once with
  "database is locked" instead of waiting);
- foreign keys on, so deleting a session deletes its participants and answers;
- within one process, writers queue on a lock before BEGIN IMMEDIATE: SQLite's busy handler
  sleeps in growing steps (up to 100 ms) while it waits, so threads of one worker racing for the
  write lock would wake late after it frees (measured: p99 of a write halved with 40 threads).
  Other workers still wait through busy_timeout.

Schema versions: `schema_version` holds one row. A new database gets today's tables and
LATEST; an older one gets each step of MIGRATIONS after its version, in order, in one transaction
(under a lock every worker takes: BEGIN IMMEDIATE on SQLite, an advisory lock on PostgreSQL), so
an upgrade keeps every old session. A database newer than this code is refused, not touched."""
from __future__ import annotations

import json
import logging
import os
import threading
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Iterator

from sqlalchemy import Engine, create_engine, event, select, text, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from ..errors import ApiError
from .models import Base

log = logging.getLogger("app")

BUSY_TIMEOUT_MS = 10_000
LATEST = 6
# version -> SQL statements that bring version-1 to it (each step written for both dialects)
MIGRATIONS: dict[int, list] = {  # a step: SQL, or a function of the connection
    2: ["ALTER TABLE class_sessions ADD COLUMN max_participants INTEGER NOT NULL DEFAULT 60",
        "ALTER TABLE class_sessions ADD COLUMN joins_locked BOOLEAN NOT NULL DEFAULT false"],
    # removed nicknames free their name: their unique key becomes "<removed ID>" (service.leave)
    3: ["UPDATE class_participants SET nickname_key = '<removed ' || CAST(id AS VARCHAR(20)) || '>' "
        "WHERE removed = true"],
    # "Be the BERT" is the activity "fill" (named for what the class does, not for a model family):
    # the page a class is on, its items, its answers, and the items' phases kept in each plan
    4: [lambda conn: renamed_activity(conn, "bert", "fill")],
    # lessons teachers prepare (app/lessons/): one table beside the sessions
    5: [lambda conn: Base.metadata.tables["lessons"].create(conn, checkfirst=True)],
    # nicknames that look alike are one nickname: keys become look-alike keys (codes.nickname_key)
    6: [lambda conn: lookalike_keys(conn)],
}


def lookalike_keys(conn) -> None:
    """Each live participant's key recomputed (removed ones keep "<removed ID>"). Two already in one
    session whose keys now meet are both kept: the later one's key gets "<ID>" appended (no typed name
    makes "<"), so nobody is renamed or dropped. A let-in list of bare keys becomes entries any
    spelling takes (the teacher's spelling was not kept)."""
    from .codes import KEY_MAX, nickname_key
    people = Base.metadata.tables["class_participants"]
    rows = conn.execute(select(people.c.id, people.c.session_id, people.c.nickname, people.c.nickname_key)
                        .where(people.c.removed.is_(False)).order_by(people.c.id)).all()
    conn.execute(text("UPDATE class_participants SET nickname_key = '<moving ' || CAST(id AS VARCHAR(20)) || '>' "
                      "WHERE removed = false"))  # no clash with each other while they change
    seen: set[tuple[int, str]] = set()
    for id_, session_id, nickname, _ in rows:
        key = nickname_key(nickname)
        if (session_id, key) in seen:
            key = key[:KEY_MAX - 12] + f"<{id_}>"
        seen.add((session_id, key))
        conn.execute(update(people).where(people.c.id == id_).values(nickname_key=key))
    sessions = Base.metadata.tables["class_sessions"]
    for id_, plan in conn.execute(select(sessions.c.id, sessions.c.plan)).all():
        plan = json.loads(plan) if isinstance(plan, str) else (plan or {})
        if any(isinstance(a, str) for a in plan.get("admit", [])):
            admit = [a if isinstance(a, dict) else {"name": a, "key": nickname_key(a), "any": True}
                     for a in plan["admit"]]
            conn.execute(update(sessions).where(sessions.c.id == id_).values(plan={**plan, "admit": admit}))
def renamed_activity(conn, old: str, new: str) -> None:
    """An activity renamed from `old` to `new` wherever a session keeps it: the page a class is on, its
    items, its answers, and the plan's locked and revealed items ("activity:item", read and written
    through the JSON column, so either dialect)."""
    conn.execute(text("UPDATE class_sessions SET page = :new WHERE page = :old"), {"old": old, "new": new})
    for table_name in ("class_items", "class_answers"):
        conn.execute(text(f"UPDATE {table_name} SET activity = :new WHERE activity = :old"), {"old": old, "new": new})
    old, new = old + ":", new + ":"
    table = Base.metadata.tables["class_sessions"]
    for id_, plan in conn.execute(select(table.c.id, table.c.plan)).all():
        plan = json.loads(plan) if isinstance(plan, str) else (plan or {})
        moved = {field: [new + k[len(old):] if k.startswith(old) else k for k in plan.get(field, [])]
                 for field in ("locked", "revealed") if field in plan}
        if any(moved[f] != plan[f] for f in moved):
            conn.execute(update(table).where(table.c.id == id_).values(plan={**plan, **moved}))


MIGRATION_LOCK = 20201  # PostgreSQL advisory lock id held while migrating


class SchemaTooNew(RuntimeError):
    pass


def unavailable(e: OperationalError) -> ApiError:
    """A database failure as the client sees it: what happened, in words, never a path or SQL."""
    said = str(getattr(e, "orig", e)).lower()
    log.warning("class database: %s", said.splitlines()[0][:200] if said else type(e).__name__)
    if "full" in said or "no space" in said:
        why = "the server's disk is full"
    elif "readonly" in said or "read-only" in said:
        why = "the server's data folder is read-only"
    elif "locked" in said or "busy" in said:
        why = "the database is busy"
    else:
        why = "the database cannot be reached"
    return ApiError(f"class sessions cannot be saved right now: {why}; try again in a moment (the server's log "
                    "says more)", None, status=503, headers={"Retry-After": "5"})


def database_url(url: str | None, data_dir: Path) -> str:
    """The URL to open: the given one (postgresql:// means psycopg 3), or a SQLite file in data_dir."""
    if not url:
        return f"sqlite:///{Path(data_dir).resolve() / 'classes.sqlite3'}"
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise ValueError(f"database_url must be a sqlite:/// or postgresql:// URL, not {parsed.drivername}://")
    return parsed.render_as_string(hide_password=False)


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    dbapi_conn.isolation_level = None  # the driver's own BEGIN is off: `_sqlite_begin` emits ours
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA synchronous=NORMAL")  # with WAL: durable at checkpoints, never corrupt
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def _sqlite_begin(conn) -> None:
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("write") else "BEGIN")


def private(path: Path) -> None:
    """The SQLite file is the owner's only (0600: nicknames and answers), made so before SQLite opens
    it (its -wal and -shm files take the same mode); one found looser is tightened."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        for found in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            if found.exists() and found.stat().st_mode & 0o077:
                found.chmod(0o600)
    except OSError:  # a read-only folder: SQLite's own error says so when it opens (a 503, unavailable())
        pass


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        path = make_url(url).database
        if path and path != ":memory:":
            private(Path(path))
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
                               pool_size=8, max_overflow=32)
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise RuntimeError("a PostgreSQL database_url needs psycopg: pip install -e '.[postgres]'") from None
    return create_engine(url, pool_size=8, max_overflow=32, pool_pre_ping=True)


class Database:
    """One per server process: the engine and its two session factories."""

    def __init__(self, url: str):
        self.url = url
        self.engine = make_engine(url)
        self.read = sessionmaker(self.engine, expire_on_commit=False)
        self.write = sessionmaker(self.engine.execution_options(write=True), expire_on_commit=False)
        self._writer = threading.RLock() if self.dialect == "sqlite" else nullcontext()

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def reading(self) -> Iterator[Session]:
        try:
            with self.read() as session:
                yield session
        except OperationalError as e:
            raise unavailable(e) from None

    @contextmanager
    def writing(self) -> Iterator[Session]:
        """A transaction that commits on success and rolls back on any error: nothing half-written.
        The database failing (a full disk, a read-only folder, a lock held too long, PostgreSQL
        gone) is a 503 saying so, logged in one line."""
        try:
            with self._writer, self.write() as session, session.begin():
                yield session
        except OperationalError as e:
            raise unavailable(e) from None

    def migrate(self) -> int:
        """Create or upgrade the schema; returns the version now in the database."""
        with self.engine.execution_options(write=True).begin() as conn:
            if self.dialect == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK})
            conn.execute(text("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"))
            found = conn.execute(text("SELECT version FROM schema_version")).scalar()
            if found is None:  # a new database: today's tables, stamped with today's version
                Base.metadata.create_all(conn)
                conn.execute(text("INSERT INTO schema_version (version) VALUES (:v)"), {"v": LATEST})
                return LATEST
            if found > LATEST:
                raise SchemaTooNew(f"the class database is at schema version {found}, newer than this "
                                   f"server's {LATEST}; upgrade the server (nothing was changed)")
            for version in range(found + 1, LATEST + 1):
                for statement in MIGRATIONS[version]:
                    statement(conn) if callable(statement) else conn.execute(text(statement))
            conn.execute(text("UPDATE schema_version SET version = :v"), {"v": LATEST})
            return LATEST

    def close(self) -> None:
        self.engine.dispose()
