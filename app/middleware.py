"""Request body limits, size and time, as a pure ASGI middleware (no BaseHTTPMiddleware: it
would buffer streaming responses and cost a task per request).

Size: a declared Content-Length over the limit is refused before the app runs. A chunked body is
counted as it arrives; once over the limit the app's own answer (FastAPI turns the aborted read
into a 400) is replaced by the 413.

Time: the whole body must arrive within `timeout_s` of the request's start, or the answer is 408
and the connection is closed. A client that sends one byte every half second would otherwise keep
its connection, a pool thread's worth of waiting and (before app/admission.py counted only
finished bodies) a model slot for as long as it liked. The deadlines of all body reads in progress
are checked by one loop timer every `timeout_s / 8` (at most 1 s), which cancels a read past its
deadline. A cancel scope per read (anyio.fail_after, ~80k instructions: twice the rest of this
middleware) or even an asyncio timer per read would be paid by every request for the rare slow
one. So a slow body is cut between `timeout_s` and `timeout_s` + the check interval.
"""
from __future__ import annotations

import asyncio
import time

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import send_error


class BodyTooLarge(Exception):
    pass


class BodyTooSlow(Exception):
    pass


class BodySizeLimit:
    def __init__(self, app: ASGIApp, max_bytes: int, paths: dict[str, int] | None = None,
                 timeout_s: float | None = None):
        self.app, self.max_bytes, self.timeout_s = app, max_bytes, timeout_s
        self.paths = paths or {}  # exact path -> its own limit (POST /api/runs carries a corpus)
        self._too_large = {limit: f"request body is larger than the limit of {limit} bytes"
                           for limit in (max_bytes, *self.paths.values())}
        self._check_s = min(1.0, timeout_s / 8) if timeout_s else None
        self._reading: dict[asyncio.Task, list] = {}  # task -> [deadline (loop time), cut]
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None

    def _watch(self, task: asyncio.Task, deadline: float, loop: asyncio.AbstractEventLoop) -> list:
        entry = [deadline, False]
        self._reading[task] = entry
        if self._timer is None or self._timer_loop is not loop:  # (a test client's loop may have ended)
            self._timer, self._timer_loop = loop.call_later(self._check_s, self._check, loop), loop
        return entry

    def _check(self, loop: asyncio.AbstractEventLoop) -> None:
        """Cancel the body reads past their deadline; again in _check_s while reads are in progress."""
        self._timer = None
        now = loop.time()
        for task, entry in list(self._reading.items()):
            if task.done():
                self._reading.pop(task, None)
            elif not entry[1] and now >= entry[0]:
                entry[1] = True
                task.cancel()
        if self._reading:
            self._timer = loop.call_later(self._check_s, self._check, loop)

    async def _timed_receive(self, receive: Receive, deadline: float) -> Message | None:
        """receive(), or None once `deadline` (time.monotonic()) has passed."""
        try:
            task, loop = asyncio.current_task(), asyncio.get_running_loop()
        except RuntimeError:  # not on asyncio (trio): anyio's cancel scope
            task = None
        if task is None:
            try:
                with anyio.fail_after(max(0.0, deadline - time.monotonic())):
                    return await receive()
            except TimeoutError:
                return None
        entry = self._watch(task, loop.time() + deadline - time.monotonic(), loop)
        try:
            return await receive()
        except asyncio.CancelledError:
            if not entry[1]:
                raise  # not ours: the server is stopping, or the client left
            if hasattr(task, "uncancel"):  # Python 3.11+: the task is no longer being cancelled
                task.uncancel()
            return None
        finally:
            self._reading.pop(task, None)

    async def _reject(self, send: Send, status: int, detail: str) -> None:
        # The rest of the body may still be on its way: close the connection after the answer.
        await send_error(send, status, detail, None, {"Connection": "close"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.paths.get(scope.get("path", ""), self.max_bytes)
        too_large = self._too_large[limit]
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await self._reject(send, 400, "invalid Content-Length header")
                    return
                if declared > limit:
                    await self._reject(send, 413, too_large)
                    return
        received = 0
        failed: tuple[int, str] | None = None  # the answer that replaces the app's
        started = False
        body_done = False
        deadline = time.monotonic() + self.timeout_s if self.timeout_s else None

        async def counting_receive() -> Message:
            nonlocal received, failed, body_done
            if body_done or deadline is None:
                message = await receive()  # e.g. Starlette listening for a disconnect: no limit
            else:
                message = await self._timed_receive(receive, deadline)
                if message is None:
                    failed = (408, f"the request body did not arrive within {self.timeout_s:g} s")
                    raise BodyTooSlow()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    failed = (413, too_large)
                    raise BodyTooLarge()
                body_done = not message.get("more_body", False)
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if failed and not started:
                return  # the answer below replaces whatever the app made of the aborted read
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except (BodyTooLarge, BodyTooSlow):
            pass
        if failed and not started:
            await self._reject(send, *failed)
