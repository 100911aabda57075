"""The truth of the item a class is answering stays with the teacher until the reveal.

The NSP quiz (POST /api/nsp/quiz/{id}/answer) and the concept check (POST /api/concepts/{id}/answer)
are self-study applets: they answer with the truth. A class session uses the same items, so every
item a live session holds in its plan (its class set: the current item and the ones to come) and
has not revealed is refused there (409 naming `id`) instead of given away (the session's code is
not needed to find this out: any student could otherwise look the answers up in another tab, the
next item's before the class gets to it). The quiz's own random question skips them. Read from the
database with a cache of CACHE_S seconds, so that a class answering the quiz costs one query a
second, not one per request. A session started or moved in this process clears the cache
(`forget`); another worker's cache reads the change at most CACHE_S later."""
from __future__ import annotations

import threading
import time
from datetime import datetime, timezone

from fastapi import Request
from sqlalchemy import select

from ..errors import ApiError
from .models import ClassSession  # (not .service: it imports the quiz routers, which import this)

CACHE_S = 1.0
_lock = threading.Lock()
_cache: dict[int, tuple[float, frozenset]] = {}  # id(database) -> (read at, {(activity, item)})
HELD = ("nsp", "concept")  # the activities whose items are the self-study applets' too


def forget() -> None:
    """The sessions changed (a start, a reveal, an end): read them again on the next check."""
    with _lock:
        _cache.clear()


def held_items(db) -> frozenset:
    """(activity, item) of every item a live session plans and has not revealed (or is on, unrevealed)."""
    now = time.monotonic()
    with _lock:
        hit = _cache.get(id(db))
        if hit is not None and now - hit[0] < CACHE_S:
            return hit[1]
    with db.reading() as s:
        rows = s.execute(select(ClassSession.page, ClassSession.item, ClassSession.revealed, ClassSession.plan)
                         .where(ClassSession.expires_at > datetime.now(timezone.utc), ClassSession.ended_at.is_(None)))
        found = set()
        for page, item, revealed, plan in rows:
            plan = plan or {}
            out = set(plan.get("revealed", []))
            found |= {(act, k) for act in HELD for k in plan.get(act, []) if f"{act}:{k}" not in out}
            if item is not None and not revealed:
                found.add((page, item))
        found = frozenset(found)
    with _lock:
        _cache[id(db)] = (now, found)
    return found


def check(request: Request, activity: str, item_id: str) -> None:
    """409 naming `id` when a class is answering this item now and its truth is not revealed."""
    classes = getattr(request.app.state, "classes", None)
    if classes is None:
        return
    try:
        held = (activity, item_id) in held_items(classes.db)
    except ApiError:  # the class database is unavailable: nothing is held back by it
        return
    if held:
        raise ApiError("a class session is using this question (now or later in the lesson): its answer is shown "
                       "when the teacher reveals it", "id", status=409)


def held(request: Request, activity: str) -> set[str]:
    """The items of `activity` held back now (for a random pick that should not land on one)."""
    classes = getattr(request.app.state, "classes", None)
    try:
        return {k for act, k in held_items(classes.db) if act == activity} if classes is not None else set()
    except ApiError:
        return set()
