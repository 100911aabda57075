"""Re-joining from another browser: a student whose phone died, or who opened the class in another
browser, gets their nickname (and their answers) back with a short rejoin code.

The code is shown only on the phone that joined (its state's `me.rejoin_code`): 6 characters of
the join-code alphabet, derived from the hash of that browser's cookie, so it is stable while that
browser holds the nickname, and no one who lacks the cookie (or the database) can work it out.
Typing the nickname with its rejoin code moves the nickname to the new browser: a new cookie
secret replaces the old one (the old browser is signed out, as if removed), and a new rejoin code
follows from it. A nickname the teacher removed cannot be taken back this way."""
from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import select

from ..auth import same
from ..errors import ApiError
from .codes import ALPHABET, CODE_LENGTH, clean_nickname
from .db import Database
from .models import Participant
from .service import find, secret_hash

WRONG = "this nickname is taken, and that rejoin code is not its code (the code is on the phone that joined)"


def rejoin_code(stored_hash: str) -> str:
    """The rejoin code of the browser whose cookie hashes to `stored_hash`."""
    digest = hashlib.sha256(b"pp-rejoin/" + stored_hash.encode()).digest()
    number = int.from_bytes(digest[:8], "big")
    out = []
    for _ in range(CODE_LENGTH):
        number, k = divmod(number, len(ALPHABET))
        out.append(ALPHABET[k])
    return "".join(out)


def normalize(raw: str) -> str:
    """The rejoin code as typed, forgiving case, spaces and dashes."""
    return "".join(ch for ch in raw.upper() if ch not in " -")


def recover(db: Database, code: str, nickname: str, rejoin: str) -> tuple[Participant, str]:
    """(the participant, a new cookie secret for this browser): 404 naming `rejoin` when the nickname
    is not in the class or the code is not its code (whatever was typed); 409 naming `code` when
    the session has ended."""
    typed = normalize(rejoin)
    with db.writing() as s:
        row = find(s, code)
        if row.ended_at is not None:
            raise ApiError("this class session has ended", "code", status=409)
        _, key = clean_nickname(nickname)
        person = s.scalars(select(Participant).where(Participant.session_id == row.id, Participant.nickname_key == key,
                                                     Participant.removed.is_(False))).first()
        if person is None or not same(rejoin_code(person.secret_hash), typed):  # any text: wrong, not a 500
            raise ApiError(WRONG, "rejoin", status=404)
        fresh = secrets.token_urlsafe(24)
        person.secret_hash = secret_hash(fresh)
        row.version += 1
        return person, fresh
