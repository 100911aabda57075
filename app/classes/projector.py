"""The projector's own link: a classroom PC puts the class on the wall with no instructor login.

Each session draws a projector key when it starts (192 random bits, kept in its plan). The teacher's
page gives the address /class?code=CODE&projector=1#key=KEY: the key rides in the #fragment, which a
browser never sends to a server, so it stays out of access logs and Referer headers. The page
trades it once (POST /api/sessions/{code}/projector) for an HttpOnly, SameSite=Strict cookie that
its reads then carry, the event stream included (an EventSource cannot send a header).

What the key gives: the stage as every student may read it (no teacher control, no answer before
its reveal, nicknames only while the leaderboard is on: the state a phone gets, without a
participant), plus the address students join at; and it is not counted as a student's reads and
streams (a projector on the school's network shares its address with the class). Nothing else: a
key can pace nothing. It stops working when the session ends (the end screen is the last thing the
projector got) or expires."""
from __future__ import annotations

from fastapi import Request

from .. import auth
from ..errors import ApiError
from .codes import normalize_code
from .db import Database
from .service import find

COOKIE_PREFIX = "pp-projector-"
MAX_KEY = 64


def cookie_name(code: str) -> str:
    return COOKIE_PREFIX + normalize_code(code)


def same_key(given: str, key: str | None) -> bool:
    return bool(key) and len(given) <= MAX_KEY and auth.same(given, key)  # any string, compared in constant time


def check_key(db: Database, code: str, given: str) -> None:
    """Does `given` open this live session's projector? 403 naming `key`, 404/410 naming `code`,
    409 once the session ended."""
    with db.reading() as s:
        row = find(s, code)
        right = (row.plan or {}).get("projector_key")
        ended = row.ended_at is not None
    if not same_key(given, right):
        raise ApiError("this projector link is not this class's (copy it again from the teacher's page)", "key",
                       status=403)
    if ended:
        raise ApiError("this class has ended: its projector link works no more", "key", status=409)


def is_projector(request: Request, db: Database, code: str) -> bool:
    """Does this request carry the live session's projector cookie? (Never an error: False.)"""
    given = request.cookies.get(cookie_name(code))
    if not given:
        return False
    try:
        check_key(db, code, given)
        return True
    except ApiError:
        return False
