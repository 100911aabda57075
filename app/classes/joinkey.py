"""The join key: the secret in the QR code and the join link, so a class behind one address joins
by itself while a guesser on that address keeps guessing (issue 53).

Each session draws a join key when it starts (KEY_BITS = 128 random bits, URL-safe base64, kept in
its plan, so a restart keeps it). The session's `student_url` (the answer of POST /api/sessions,
the projector's `join_url`, the teacher page's QR code) is /join?code=CODE&key=KEY, and the phone's
join sends it back as `key` in POST /api/sessions/{code}/join.

Why a second secret beside the code: the code is typed, so it is short (23**6 codes) and an
address that guessed too many is answered alike, right code or wrong (app/classes/door.py). The key
is never typed, so it can be long enough that guessing it is hopeless (2**128 keys), and a join
that carries the right one needs no budget: it is let past the address's spent code guesses and the
door. Everything else still holds: the room's lock and places, the nickname rules, and the
address's budget of new nicknames (app/classes/guard.py's JoinBudget), because the key is as public
in the classroom as the code (it is on the projector). A wrong or malformed key is no key: the join
takes the typed code's path, with its limits, its 429 and its door, so a wrong key tells a guesser
nothing a wrong code would not. A rejoin (another browser taking a nickname back) is never let past
with the key: its rejoin codes stay budgeted.

The key is compared in constant time, as the projector's (app/classes/projector.py), and shown
only to the instructor (`join_key` in the state) and in the link itself."""
from __future__ import annotations

import secrets

from ..errors import ApiError
from .db import Database
from .projector import same_key
from .service import find

KEY_BITS = 128
FIELD = "join_key"  # where a session's plan keeps it


def draw() -> str:
    return secrets.token_urlsafe(KEY_BITS // 8)


def stored(db: Database, code: str) -> str | None:
    """The session's join key, or None (a wrong code, or a session started before keys were drawn)."""
    try:
        with db.reading() as s:
            return (find(s, code).plan or {}).get(FIELD)
    except ApiError:
        return None


def opens(db: Database, code: str, given: str | None) -> bool:
    """Does `given` open this session's join? (One read, right code or wrong; never an error: False.)"""
    return bool(given) and same_key(given, stored(db, code))

