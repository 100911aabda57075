"""Class sessions, as functions over the database: create, join, answer, pace, pool, export,
delete. Routers (app/classes/router.py) call these; nothing here knows HTTP beyond ApiError.

Every write is one transaction (Database.writing): a failure anywhere leaves nothing half-written.
Every read and write names its session by code, and every query is filtered by that session's
id, so one session's data is never read through another's code."""
from __future__ import annotations

import hashlib
import random
import secrets
import time
from datetime import datetime, timedelta, timezone

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..errors import ApiError
from ..registry import Registry
from ..concepts import bank as concept_bank
from ..inputs import quiz_bank
from . import activities, embargo, letin
from ..lessons import presenter
from .codes import clean_nickname, display_code, new_code, normalize_code
from .db import Database
from .models import Answer, ClassSession, Item, Participant
from ..schemas.classes import AnswerRequest, CreateSession, NewItem, StateChange

MAX_PARTICIPANTS = 1000  # the most places a teacher may give a session
MAX_ITEMS = 200  # stored items (Be-the-BERT sentences, lines to label) per session
LEADERS = 10


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def aware(t: datetime) -> datetime:
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)  # SQLite hands back naive UTC


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def find(s: Session, code: str, *, lock: bool = False) -> ClassSession:
    """The live session with this code: 404 (unknown) or 410 (expired) naming `code`."""
    query = select(ClassSession).where(ClassSession.code == normalize_code(code))
    row = s.scalars(query.with_for_update() if lock else query).first()
    if row is None:
        raise ApiError("no class session has this code (check the code on the projector)", "code", status=404)
    if aware(row.expires_at) <= utcnow():
        raise ApiError("this class session has expired", "code", status=410)
    return row


def context(s: Session, row: ClassSession, registry: Registry) -> activities.Context:
    items = s.scalars(select(Item).where(Item.session_id == row.id).order_by(Item.id))
    return activities.Context(registry, row.model, dict(row.plan or {}),
                              {(i.activity, i.key): i.payload for i in items})


def me(s: Session, row: ClassSession, secret: str | None) -> Participant | None:
    if not secret:
        return None
    return s.scalars(select(Participant).where(Participant.session_id == row.id,
                                               Participant.secret_hash == secret_hash(secret),
                                               Participant.removed.is_(False))).first()


def leave(person: Participant) -> None:
    """Remove a nickname: its answers leave the results, its place and its nickname are free again
    (its key becomes one no nickname can have: "<" is refused in nicknames, app/classes/codes.py)."""
    person.removed = True
    person.nickname_key = removed_key(person.id)


def removed_key(participant_id: int) -> str:
    return f"<removed {participant_id}>"


def has_joined(db: Database, code: str, secret: str) -> bool:
    """Does `secret` (a participant cookie) belong to a nickname still in the live session `code`?"""
    try:
        with db.reading() as s:
            return me(s, find(s, code), secret) is not None
    except ApiError:
        return False


# --- creating and joining -------------------------------------------------------------------

def plan_for(req: CreateSession, registry: Registry) -> dict:
    bank = quiz_bank(registry.get(req.model)) if req.nsp_count else []
    ids = [it["id"] for it in bank]
    count = min(req.nsp_count, len(ids))
    # A class set of its own: without a seed from the teacher, a fresh one (kept in the plan, so a restart
    # keeps the set), never the bank's first items that every class would get
    seed = req.nsp_seed if req.nsp_seed is not None else secrets.randbelow(2**31)
    nsp = random.Random(seed).sample(ids, count)
    known = [q["id"] for q in concept_bank()]
    concepts = known if req.concepts is None else req.concepts
    for cid in concepts:
        if cid not in known:
            raise ApiError(f"concepts lists {cid[:40]!r}, which is not a question of the concept check", "concepts")
    labels = [" ".join(x.split()) for x in req.labels]
    if req.lines and len(labels) < 2:
        raise ApiError("labels must name at least 2 labels when lines are given", "labels")
    if any(not x or len(x) > 40 for x in labels) or len(set(labels)) != len(labels):
        raise ApiError("labels must be distinct, 1-40 characters each", "labels")
    if any(not line.strip() or len(line) > 500 for line in req.lines):
        raise ApiError("each of lines must be 1-500 characters of text", "lines")
    return {"nsp": nsp, "nsp_seed": seed, "concept": list(dict.fromkeys(concepts)), "labels": labels, "revealed": []}


def create(db: Database, registry: Registry, req: CreateSession, default_hours: float,
           models_on_phones: bool = False, lesson=None) -> ClassSession:
    """A new session; `models_on_phones` (the server's --models-on-phones) is its default for the phones.
    With `lesson` (app/lessons/schema.py), the session gives it: its stages and their items."""
    if lesson is None:
        plan = plan_for(req, registry)
        items = [("label", f"l{k + 1}", {"text": line.strip()}) for k, line in enumerate(req.lines)]
    else:
        plan, items = presenter.resolve(lesson, registry, req.model)
    plan["models_on_phones"] = models_on_phones if req.models_on_phones is None else req.models_on_phones
    plan["projector_key"] = secrets.token_urlsafe(24)  # 192 bits: the projector's own link (app/classes/projector.py)
    plan["join_key"] = secrets.token_urlsafe(16)  # 128 bits: the QR link's join key (app/classes/joinkey.py)
    now = utcnow()
    for _ in range(20):  # a code already in use: draw another
        try:
            with db.writing() as s:
                s.execute(delete(ClassSession).where(ClassSession.expires_at < now))  # expired sessions go
                row = ClassSession(code=new_code(), created_at=now, model=req.model, plan=plan,
                                   expires_at=now + timedelta(hours=req.hours or default_hours),
                                   max_participants=req.max_participants, joins_locked=False)
                s.add(row)
                s.flush()
                for activity, key, payload in items:
                    s.add(Item(session_id=row.id, activity=activity, key=key, payload=payload))
                if lesson is not None:  # BERT must read every hidden sentence: checked now, not when the class answers
                    ctx = activities.Context(registry, req.model, plan, {(a, k): p for a, k, p in items})
                    for key in ctx.keys("fill"):
                        activities.model_answer(ctx, "fill", key)
            embargo.forget()  # its class set is held back from the self-study routes at once
            return row
        except IntegrityError:
            continue
    raise ApiError("could not draw a free join code; try again", None, status=503)


def join(db: Database, code: str, nickname: str, secret: str | None, budget=None) -> tuple[Participant, str]:
    """(the participant, its cookie secret). The same browser (its cookie) gets its participant back.
    A new nickname needs a free place (removed nicknames free theirs), a room the teacher has not
    closed, and one of the address's new-nickname budget (`budget`: app/classes/guard.py); a
    nickname the teacher let in (`admit`) needs none of the three, once."""
    name, key = clean_nickname(nickname)
    if secret is None and budget is not None:
        try:  # a browser without this session's cookie can only add a nickname: refused before any write
            budget.check()
        except ApiError:
            with db.reading() as s:  # a let-in nickname (PUT .../state {"admit"}) needs no budget
                if not letin.is_admitted(find(s, code).plan or {}, name, key):
                    raise
            budget = None
    try:
        with db.writing() as s:
            row = find(s, code)
            if row.ended_at is not None:
                raise ApiError("this class session has ended", "code", status=409)
            found = me(s, row, secret)
            if found is not None:
                return found, secret
            taken, plan = letin.claim(row.plan or {}, name, key)  # 409 for a look-alike of a let-in name
            if taken is not None:
                row.plan, row.version = plan, row.version + 1
            if taken is None and row.joins_locked:
                raise ApiError("the teacher has closed this class to new students; ask them to let you in "
                               "(they type your nickname under Let in)", "code", status=409)
            if (taken is None or taken.get("door")) and letin.joined(s, row) >= row.max_participants:
                raise ApiError(f"this class session is full ({row.max_participants} students); the teacher can "
                               "remove nicknames, make room, or let you in by nickname", "code", status=409)
            if taken is None and budget is not None:
                budget.take()
            secret = secrets.token_urlsafe(24)
            person = Participant(session_id=row.id, nickname=name, nickname_key=key, secret_hash=secret_hash(secret),
                                 joined_at=utcnow())
            s.add(person)
            s.flush()
            return person, secret
    except IntegrityError:
        if budget is not None:
            budget.refund()
        raise ApiError("nickname is already taken in this class; pick another", "nickname", status=409) from None
    except ApiError as e:
        if budget is not None and e.status == 503:
            budget.refund()
        raise


def add_item(db: Database, registry: Registry, code: str, req: NewItem) -> dict:
    with db.writing() as s:
        row = find(s, code)
        ctx = context(s, row, registry)
        if len(ctx.stored) >= MAX_ITEMS:
            raise ApiError(f"a session holds at most {MAX_ITEMS} items", "activity", status=409)
        payload = {"text": req.text}
        if req.activity == "fill":
            positions = sorted(set(req.positions))
            if not positions:
                raise ApiError("positions must list the characters to hide (1-10 of them)", "positions")
            if positions[0] < 0 or positions[-1] >= len(req.text):
                raise ApiError(f"positions must lie within the text (0-{len(req.text) - 1})", "positions")
            if any(req.text[p].isspace() for p in positions):
                raise ApiError("positions must not hide a space or line break", "positions")
            payload["positions"] = positions
        elif not ctx.plan.get("labels"):
            raise ApiError("this session has no labels: give labels when you start it", "activity", status=409)
        key = f"{req.activity[0]}{len(ctx.keys(req.activity)) + 1}"
        s.add(Item(session_id=row.id, activity=req.activity, key=key, payload=payload))
        if req.activity == "fill":  # BERT must be able to read it: checked now, not when the class answers
            ctx.stored[(req.activity, key)] = payload
            activities.model_answer(ctx, req.activity, key)
        row.version += 1
        return {"activity": req.activity, "item": key}


# --- answering ------------------------------------------------------------------------------

def answer(db: Database, registry: Registry, code: str, secret: str | None, req: AnswerRequest) -> dict:
    try:
        with db.writing() as s:
            row = find(s, code)
            if row.ended_at is not None:
                raise ApiError("this class session has ended", "code", status=409)
            person = me(s, row, secret)
            if person is None:
                raise ApiError("join the class first (this browser has not joined this session, or was removed)",
                               "participant", status=403)
            ctx = context(s, row, registry)
            ctx.payload(req.activity, req.item)  # 404 naming item
            if req.activity != row.page:
                raise ApiError(f"the class is not on {activities.NAMES[req.activity]} now", "activity", status=409)
            if req.activity != "label" and req.item != row.item:
                raise ApiError("this item is not the one the class is on", "item", status=409)
            if row.locked or row.revealed:
                raise ApiError("answers to this item are locked", "item", status=409)
            if row.plan.get("paused"):
                raise ApiError("the teacher has paused the class: answer once it goes on", "item", status=409)
            value = activities.check_answer(ctx, req.activity, req.item, req.answer)
            s.add(Answer(session_id=row.id, participant_id=person.id, activity=req.activity, item=req.item,
                         answer=value, created_at=utcnow()))
            s.flush()
            return {"activity": req.activity, "item": req.item, "answer": value}
    except IntegrityError:
        raise ApiError("you already answered this item", "item", status=409) from None


# --- pacing ---------------------------------------------------------------------------------

def phase_keys(ctx: activities.Context, page: str, item: str | None) -> list[str]:
    """The "activity:item" keys one lock or reveal applies to: the item, or (Label together, whose
    lines are all open at once) every line."""
    if page == "label":
        return [f"label:{k}" for k in ctx.keys("label")]
    return [f"{page}:{item}"] if item else []


def phase(plan: dict, page: str, item: str | None) -> tuple[bool, bool]:
    """(locked, revealed) of an item as the session keeps it: open -> locked -> revealed, per item,
    so going back to an item finds it as the class left it."""
    if item is None:
        return False, False
    done = f"{page}:{item}"
    revealed = done in plan.get("revealed", [])
    return revealed or done in plan.get("locked", []), revealed


def _mark(plan: dict, field: str, keys: list[str], on: bool) -> dict:
    kept = [k for k in plan.get(field, []) if k not in keys]
    return {**plan, field: kept + keys if on else kept}


def change(db: Database, registry: Registry, code: str, req: StateChange) -> None:
    with db.writing() as s:
        row = find(s, code, lock=True)
        ctx = context(s, row, registry)
        page = req.page or row.page
        item = req.item if req.item is not None else (row.item if page == row.page else None)
        if req.stage is not None:  # a lesson's stage: its applet, or its first item (or the item named)
            page, first = presenter.start_of(row.plan, req.stage)
            item = req.item if req.item is not None and page in activities.ACTIVITIES else first
        if page in activities.ACTIVITIES:
            keys = ctx.keys(page)
            if item is None and keys:
                item = keys[0]
            if item is not None and item not in keys:
                raise ApiError(f"{activities.NAMES[page]} has no item {item[:64]!r} in this session", "item", status=404)
        else:
            item = None
        plan = presenter.placed(dict(row.plan or {}), page, item, req.stage)
        if req.applet_query is not None:
            plan = presenter.with_query(plan, req.applet_query)
        if (page, item) != (row.page, row.item):  # the item as the class left it (a new one is open)
            row.page, row.item = page, item
            row.locked, row.revealed = phase(plan, page, item)
            plan["join_screen"] = False  # a new item fills the projector
        here = phase_keys(ctx, row.page, row.item)
        if req.reopen:  # the teacher's explicit choice: the item takes answers again (its truth is hidden again)
            plan = _mark(_mark(plan, "revealed", here, False), "locked", here, False)
            row.locked = row.revealed = False
        if req.revealed is False and row.revealed:
            raise ApiError("a revealed item stays revealed (the class has seen its answer); send reopen: true to "
                           "take answers to it again", "revealed", status=409)
        if req.locked is False and row.revealed:
            raise ApiError("a revealed item stays locked (the class has seen its answer); send reopen: true to "
                           "take answers to it again", "locked", status=409)
        if req.locked is not None and not row.revealed:
            row.locked = req.locked
            plan = _mark(plan, "locked", here, req.locked)
        if req.revealed and here:
            row.locked = row.revealed = True
            plan = _mark(plan, "revealed", [k for k in here if k not in plan.get("revealed", [])], True)
        if req.leaderboard is not None:
            row.leaderboard = req.leaderboard
        if req.room_locked is not None:
            row.joins_locked = req.room_locked
        if req.max_participants is not None:
            row.max_participants = req.max_participants
        if req.paused is not None:
            plan["paused"] = req.paused
        if req.join_screen is not None:  # J: the projector shows the join screen (code, QR) over the item
            plan["join_screen"] = req.join_screen
        if req.models_on_phones is not None:  # the phones download the device copies (lib/compute.js)
            plan["models_on_phones"] = req.models_on_phones
        if req.admit is not None:  # a late student let in by nickname (past the lock, the places, the budget)
            plan = letin.admit(plan, *clean_nickname(req.admit, "admit"))
        if req.let_in_door:  # who knocked past a guesser on their address, as far as the places go (letin.py)
            plan = letin.let_in(plan, letin.joined(s, row), row.max_participants, time.time())
        if req.ended is not None:
            row.ended_at = utcnow() if req.ended else None
            if req.ended:
                row.page, row.item = "end", None
        row.plan = plan
        row.version += 1
    embargo.forget()  # a reveal (or an end) releases its keys to the self-study routes at once


def remove(db: Database, code: str, participant_id: int) -> None:
    with db.writing() as s:
        row = find(s, code)
        person = s.scalars(select(Participant).where(Participant.session_id == row.id,
                                                     Participant.id == participant_id)).first()
        if person is None:
            raise ApiError("this session has no such participant", "participant_id", status=404)
        leave(person)
        row.version += 1


def delete_session(db: Database, code: str) -> None:
    with db.writing() as s:
        row = find(s, code)
        s.execute(delete(Answer).where(Answer.session_id == row.id))
        s.execute(delete(Item).where(Item.session_id == row.id))
        s.execute(delete(Participant).where(Participant.session_id == row.id))
        s.delete(row)


def live(db: Database) -> list[dict]:
    """Sessions not yet expired, newest first, with how many joined."""
    with db.reading() as s:
        joined = (select(func.count()).select_from(Participant)  # removed nicknames have left (their places are free)
                  .where(Participant.session_id == ClassSession.id, Participant.removed.is_(False)).scalar_subquery())
        rows = s.execute(select(ClassSession, joined).where(ClassSession.expires_at > utcnow())
                         .order_by(ClassSession.id.desc()).limit(50))
        return [{"code": r.code, "display_code": display_code(r.code), "created_at": aware(r.created_at).isoformat(),
                 "ended": r.ended_at is not None, "page": r.page, "joined": n} for r, n in rows]
