"""The room: who is in a class session, and the teacher's tools to keep it the class's own.

A session has `max_participants` places (the teacher's choice when starting it, 60 by default:
a class, not a stadium; changed any time with PUT .../state). A removed nickname frees its place.
The teacher can close the room to new nicknames (`room_locked`) once the class is in: a
student already in gets back in with the cookie, nobody new can join. And one call removes every
nickname that has never answered anything: what a join flood leaves behind."""
from __future__ import annotations

from sqlalchemy import exists, select

from .db import Database
from .models import Answer, Participant
from .service import find


def remove_silent(db: Database, code: str) -> int:
    """Remove every nickname of the session that has not answered anything; how many were removed."""
    with db.writing() as s:
        row = find(s, code)
        answered = exists().where(Answer.participant_id == Participant.id)
        silent = list(s.scalars(select(Participant).where(Participant.session_id == row.id,
                                                          Participant.removed.is_(False), ~answered)))
        for person in silent:
            person.removed = True
        if silent:
            row.version += 1
        return len(silent)
