"""Request body limits, size and time, as a pure ASGI middleware (no BaseHTTPMiddleware: it
would buffer streaming responses and cost a task per request).

Size: a declared Content-Length over the limit is refused before the app runs. A chunked body is
counted as it arrives; once over the limit the app's own answer (FastAPI turns the aborted read
into a 400) is replaced by the 413.

Time: the whole body must arrive within `timeout_s` of the request's start, or the answer is 408
and the connection is closed. A client that sends one byte every half second would otherwise keep
its connection, a pool thread's worth of waiting and (before app/admission.py counted only
finished bodies) a model slot for as long as it liked.
"""
from __future__ import annotations

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

    async def _reject(self, send: Send, status: int, detail: str) -> None:
        # The rest of the body may still be on its way: close the connection after the answer.
        await send_error(send, status, detail, None, {"Connection": "close"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.paths.get(scope.get("path", ""), self.max_bytes)
        too_large = f"request body is larger than the limit of {limit} bytes"
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
                try:
                    with anyio.fail_after(max(0.0, deadline - time.monotonic())):
                        message = await receive()
                except TimeoutError:
                    failed = (408, f"the request body did not arrive within {self.timeout_s:g} s")
                    raise BodyTooSlow() from None
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
