"""The truth of the item a class is answering stays with the teacher until the reveal.

The NSP quiz (POST /api/nsp/quiz/{id}/answer) and the concept check (POST /api/concepts/{id}/answer)
are self-study applets: they answer with the truth. A class session uses the same items, so while
a live session is on an item whose truth the teacher has not revealed, those two routes answer
409 for that item instead of giving it away (the session's code is not needed to find this out:
any student could otherwise look the answer up in another tab). Read from the database with a
cache of CACHE_S seconds, so that a class answering the quiz costs one query a second, not one
per request."""
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
_cache: dict[int, tuple[float, frozenset]] = {}  # id(database) -> (read at, {(page, item)})


def current_items(db) -> frozenset:
    """(page, item) of every live session whose current item is not revealed yet."""
    now = time.monotonic()
    with _lock:
        hit = _cache.get(id(db))
        if hit is not None and now - hit[0] < CACHE_S:
            return hit[1]
    with db.reading() as s:
        rows = s.execute(select(ClassSession.page, ClassSession.item)
                         .where(ClassSession.expires_at > datetime.now(timezone.utc), ClassSession.ended_at.is_(None),
                                ClassSession.revealed.is_(False), ClassSession.item.is_not(None)))
        found = frozenset((page, item) for page, item in rows)
    with _lock:
        _cache[id(db)] = (now, found)
    return found


def check(request: Request, activity: str, item_id: str) -> None:
    """409 naming `id` when a class is answering this item now and its truth is not revealed."""
    classes = getattr(request.app.state, "classes", None)
    if classes is None:
        return
    try:
        held = (activity, item_id) in current_items(classes.db)
    except ApiError:  # the class database is unavailable: nothing is held back by it
        return
    if held:
        raise ApiError("a class session is answering this question right now: its answer is shown when the teacher "
                       "reveals it", "id", status=409)
