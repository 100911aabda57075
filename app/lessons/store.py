"""Where lessons live: the ones teachers saved (a row each in the class database, beside the
sessions) and the ones that ship with the app (app/lessons/shipped/*.json, read-only: a teacher
copies one to change it). Ids: a saved lesson's number ("12"), a shipped lesson's file name
("what-pretraining-is"); the two never collide (a file name is never all digits)."""
from __future__ import annotations

import json
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from sqlalchemy import select

from ..classes.db import Database
from ..classes.models import Lesson as LessonRow
from ..errors import ApiError
from .schema import Lesson

SHIPPED = Path(__file__).resolve().parent / "shipped"
MAX_SAVED = 500  # lessons one server keeps (a runaway script cannot fill the disk)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


@lru_cache(maxsize=1)
def shipped() -> dict[str, dict]:
    """The shipped lessons by id, each checked against the file format (a broken file fails loudly,
    at the first listing, and its test)."""
    out = {}
    for path in sorted(SHIPPED.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out[path.stem] = Lesson.model_validate(data).model_dump(mode="json", exclude_none=True)
    return out


def entry(id_: str, body: dict, shipped_: bool, updated: datetime | None) -> dict:
    return {"id": id_, "title": body["title"], "summary": body.get("summary", ""), "minutes": body.get("minutes"),
            "stages": len(body["stages"]), "shipped": shipped_,
            "updated_at": updated.replace(tzinfo=updated.tzinfo or timezone.utc).isoformat() if updated else None}


def listing(db: Database) -> list[dict]:
    """The shipped lessons first, then the saved ones, newest change first."""
    with db.reading() as s:
        rows = s.execute(select(LessonRow.id, LessonRow.body, LessonRow.updated_at)
                         .order_by(LessonRow.updated_at.desc(), LessonRow.id.desc())).all()
    return ([entry(k, body, True, None) for k, body in shipped().items()]
            + [entry(str(i), body, False, at) for i, body, at in rows])


def _number(id_: str) -> int:
    if not (id_.isascii() and id_.isdigit()) or len(id_) > 12:  # "²" is a digit to str.isdigit, not to int()
        raise ApiError(f"no lesson has the id {id_[:40]!r}", "id", status=404)
    return int(id_)


def get(db: Database, id_: str) -> tuple[dict, bool]:
    """(the lesson's file, shipped?); 404 naming `id`."""
    if id_ in shipped():
        return shipped()[id_], True
    with db.reading() as s:
        row = s.get(LessonRow, _number(id_))
        if row is None:
            raise ApiError(f"no lesson has the id {id_[:40]!r}", "id", status=404)
        return row.body, False


def _stored(lesson: Lesson) -> dict:
    return lesson.model_dump(mode="json", exclude_none=True)


def add(db: Database, lesson: Lesson) -> str:
    now = utcnow()
    with db.writing() as s:
        if (s.query(LessonRow).count()) >= MAX_SAVED:
            raise ApiError(f"this server keeps at most {MAX_SAVED} lessons: delete some first", None, status=409)
        row = LessonRow(title=lesson.title, body=_stored(lesson), created_at=now, updated_at=now)
        s.add(row)
        s.flush()
        return str(row.id)


def replace(db: Database, id_: str, lesson: Lesson) -> None:
    if id_ in shipped():
        raise ApiError("a shipped lesson cannot be changed: copy it (POST its file to /api/lessons) and change the copy",
                       "id", status=409)
    with db.writing() as s:
        row = s.get(LessonRow, _number(id_))
        if row is None:
            raise ApiError(f"no lesson has the id {id_[:40]!r}", "id", status=404)
        row.title, row.body, row.updated_at = lesson.title, _stored(lesson), utcnow()


def remove(db: Database, id_: str) -> None:
    if id_ in shipped():
        raise ApiError("a shipped lesson cannot be deleted", "id", status=409)
    with db.writing() as s:
        row = s.get(LessonRow, _number(id_))
        if row is None:
            raise ApiError(f"no lesson has the id {id_[:40]!r}", "id", status=404)
        s.delete(row)
