"""Live updates for a class session, shared by every stream in this process.

One watcher per session code polls the database (POLL_S) for (state version, answers,
participants) with one small query, however many students and dashboards are connected, and
wakes the streams waiting on it when that changes. Going through the database (not memory) is
what lets several workers, or several machines on one PostgreSQL, serve one class: an answer
that reached another worker shows up here within one poll."""
from __future__ import annotations

import asyncio
import logging
from typing import AsyncIterator, Callable

from anyio import to_thread

from sqlalchemy import func, select

from .db import Database
from .models import Answer, ClassSession, Participant
from .service import aware, utcnow

POLL_S = 0.25
log = logging.getLogger("app.classes")


def watch_key(db: Database, code: str) -> tuple[int, int, int] | None:
    """(state version, answers, participants): what a watcher polls; None once the session is gone."""
    with db.reading() as s:
        row = s.execute(select(ClassSession.id, ClassSession.version, ClassSession.expires_at)
                        .where(ClassSession.code == code)).first()
        if row is None or aware(row.expires_at) <= utcnow():
            return None
        answers = s.scalar(select(func.count()).select_from(Answer).where(Answer.session_id == row.id))
        people = s.scalar(select(func.count()).select_from(Participant).where(Participant.session_id == row.id))
        return row.version, answers, people


class Watch:
    def __init__(self):
        self.key: tuple | None = ()  # () = not read yet; None = the session is gone
        self.changed = asyncio.Event()
        self.listeners = 0
        self.task: asyncio.Task | None = None
        self.cache: dict = {}  # per key: payloads every viewer of one kind shares

    def publish(self, key: tuple | None) -> None:
        self.key, self.cache = key, {}
        self.changed.set()
        self.changed = asyncio.Event()


class Hub:
    def __init__(self, db: Database, poll_s: float = POLL_S):
        self.db, self.poll_s = db, poll_s
        self.watches: dict[str, Watch] = {}

    async def _poll(self, code: str, watch: Watch) -> None:
        while True:
            try:
                key = await to_thread.run_sync(watch_key, self.db, code)
            except Exception:  # noqa: BLE001 - a database hiccup: keep the streams, try again
                log.exception("class watcher for %s failed to poll", code)
                key = watch.key
            if key != watch.key:
                watch.publish(key)
            if key is None:
                return
            await asyncio.sleep(self.poll_s)

    async def follow(self, code: str, relevant: Callable[[tuple], tuple]) -> AsyncIterator[tuple[Watch, tuple | None]]:
        """Yields (watch, key) now and whenever relevant(key) changes; the key None (session gone) ends it."""
        watch = self.watches.get(code)
        if watch is None or watch.task is None or watch.task.done():
            watch = self.watches[code] = Watch()
            watch.task = asyncio.create_task(self._poll(code, watch))
        watch.listeners += 1
        try:
            last = object()
            while True:
                waiter = watch.changed
                if watch.key != ():
                    if watch.key is None:
                        yield watch, None
                        return
                    seen = relevant(watch.key)
                    if seen != last:
                        last = seen
                        yield watch, watch.key
                await waiter.wait()
        finally:
            watch.listeners -= 1
            if watch.listeners == 0 and self.watches.get(code) is watch:
                watch.task.cancel()
                del self.watches[code]
