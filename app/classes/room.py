"""The room: who is in a class session, and the teacher's tools to keep it the class's own.

A session has `max_participants` places (the teacher's choice when starting it, 60 by default:
a class, not a stadium; changed any time with PUT .../state). A removed nickname frees its place.
The teacher can close the room to new nicknames (`room_locked`) once the class is in: a
student already in gets back in with the cookie, nobody new can join, unless the teacher lets a
late student in by nickname (`admit`, app/classes/service.py). And one call removes the silent:
every nickname that has never answered anything although the class answered since it joined (what
a join flood leaves behind); in the lobby, before anything was asked, nobody is silent."""
from __future__ import annotations

from sqlalchemy import and_, exists, select
from sqlalchemy.orm import Session

from .db import Database
from .models import Answer, ClassSession, Participant
from .service import find, leave


def silent(s: Session, row: ClassSession) -> list[Participant]:
    """The nicknames still in that never answered, though someone answered after they joined."""
    theirs = exists().where(Answer.participant_id == Participant.id)
    since = exists().where(and_(Answer.session_id == row.id, Answer.created_at > Participant.joined_at))
    return list(s.scalars(select(Participant).where(Participant.session_id == row.id, Participant.removed.is_(False),
                                                    ~theirs, since).order_by(Participant.id)))


def remove_silent(db: Database, code: str) -> int:
    """Remove the silent nicknames of the session (their places and names are free); how many."""
    with db.writing() as s:
        row = find(s, code)
        gone = silent(s, row)
        for person in gone:
            leave(person)
        if gone:
            row.version += 1
        return len(gone)
