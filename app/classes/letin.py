"""Who the teacher lets in, and who waits at the door: the two lists a session's plan keeps.

`admit`: the nicknames the teacher let in (PUT .../state {"admit"}, or the door's "Let them in"), each
kept as the teacher spelt it and its key (codes.nickname_key: names that look alike share it). A join
whose key matches takes the let-in only when it spells the name as the teacher did (case and NFKC
aside); a look-alike spelling ("Zоe" with a Cyrillic о for "Zoe") is refused with a 409 naming
`nickname`, so a look-alike cannot take a classmate's place. The teacher confirms a look-alike by
letting in that spelling (it replaces the other). At most ADMIT_MAX wait.

`door`: the names that knocked (app/classes/door.py has the rule and its numbers), each with its
key, a hash of the address it came from and when it last knocked; `door_knocked` counts every name
that knocked, listed or not. "Let them in" admits the oldest waiting names, only as many as the room
has free places (max_participants minus the joined and minus the door's names let in and not yet
joined); the rest keep waiting. A door let-in still needs a free place when it joins, locked room
or not; a name the teacher types under Let in does not (the teacher's own choice)."""
from __future__ import annotations

import hashlib
import unicodedata

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..errors import ApiError
from .codes import nickname_key
from .models import ClassSession, Participant

ADMIT_MAX = 20  # nicknames the teacher let in that have not joined yet
DOOR_MAX = 60  # names waiting at the door, all addresses together
DOOR_PER_ADDRESS = 8  # names waiting from one address
DOOR_STALE_S = 90.0  # a name whose page stopped knocking this long leaves the door


def spelling(name: str) -> str:
    """A name as the keyboard spelt it: case and compatibility forms (full-width, ligatures) aside."""
    return unicodedata.normalize("NFKC", name).casefold()


def admits(plan: dict) -> list[dict]:
    # before schema 6 an entry was a key alone (db.py's step 6 turns those into entries): any spelling
    return [a if isinstance(a, dict) else {"name": a, "key": nickname_key(a), "any": True}
            for a in plan.get("admit", [])]


def admit(plan: dict, name: str, key: str, door: bool = False) -> dict:
    kept = [a for a in admits(plan) if a["key"] != key]
    return {**plan, "admit": [*kept, {"name": name, "key": key, **({"door": True} if door else {})}][-ADMIT_MAX:],
            "door": [d for d in plan.get("door", []) if isinstance(d, dict) and d["key"] != key]}


def claim(plan: dict, name: str, key: str) -> tuple[dict | None, dict]:
    """(the let-in this join takes, the plan without it), or (None, plan); 409 for a look-alike spelling."""
    for a in admits(plan):
        if a["key"] == key:
            if not a.get("any") and spelling(a["name"]) != spelling(name):
                raise ApiError("your teacher let in a name that looks like this one but is spelt with different "
                               "letters; type your name the way your teacher did, or ask them to let you in",
                               "nickname", status=409)
            return a, {**plan, "admit": [b for b in admits(plan) if b["key"] != key]}
    return None, plan


def is_admitted(plan: dict, name: str, key: str) -> bool:
    try:
        return claim(plan, name, key)[0] is not None
    except ApiError:
        return False


def joined(s: Session, row: ClassSession) -> int:
    return s.scalar(select(func.count()).select_from(Participant)
                    .where(Participant.session_id == row.id, Participant.removed.is_(False)))


def address_tag(address: str) -> str:
    return hashlib.sha256(address.encode()).hexdigest()[:12]  # which address, without keeping it


def waiting(plan: dict, now: float) -> list[dict]:
    """The names at the door whose pages still knock, oldest first."""
    return [d for d in plan.get("door", []) if isinstance(d, dict) and now - d["at"] < DOOR_STALE_S]


def knocked(plan: dict, name: str, key: str, address: str, now: float) -> dict | None:
    """The plan with this knock counted (and listed when the rule allows), or None when nothing changed."""
    door, by = waiting(plan, now), address_tag(address)
    for d in door:
        if d["key"] == key:  # already waiting: it stays; its own page's knock keeps it fresh
            if d["by"] != by:
                return None
            return {**plan, "door": [{**e, "at": now} if e is d else e for e in door]}
    if any(a["key"] == key for a in admits(plan)):
        return None  # let in already: its next try gets in
    plan = {**plan, "door_knocked": plan.get("door_knocked", 0) + 1}
    if len(door) >= DOOR_MAX or sum(d["by"] == by for d in door) >= DOOR_PER_ADDRESS:
        return {**plan, "door": door}  # counted, not listed: nobody waiting is pushed off
    return {**plan, "door": [*door, {"name": name, "key": key, "by": by, "at": now}]}


def let_in(plan: dict, joined_now: int, places: int, now: float) -> dict:
    """Everyone waiting, oldest first, as far as the room's free places go."""
    pending = sum(1 for a in admits(plan) if a.get("door"))
    free = max(0, places - joined_now - pending)
    door = waiting(plan, now)
    for d in door[:free]:
        plan = admit(plan, d["name"], d["key"], door=True)
    return {**plan, "door": door[free:]}


def view(plan: dict, now: float) -> dict:
    """The teacher's view of both lists."""
    door = waiting(plan, now)
    return {"admitted": [a["name"] for a in admits(plan)], "door": [d["name"] for d in door],
            "door_knocked": plan.get("door_knocked", len(door))}
