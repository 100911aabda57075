"""uvicorn's HTTP protocol with the two timeouts a classroom server needs, used by `python -m app`.

Below the ASGI app, where only the connection is visible:

- Header timeout. uvicorn gives a new connection all the time it likes to finish its request
  headers (its keep-alive timeout starts only after a response), so 50 sockets that send a header
  line now and then (Slowloris) stay open for ever. Here a connection that has no request whose
  headers are complete gets `header_timeout_s` from its start, or from its last response, to
  produce one; then it is closed.
- Write stall. When a client stops reading, the transport's buffer fills and the app's next send
  waits (asyncio flow control); a stream would wait for ever, holding its generator and its
  connection. Here, while writes are paused, the bytes the client has not taken yet (our buffer
  plus the kernel's send queue) are checked every send_timeout_s / 4; when they have not fallen
  for `send_timeout_s` the connection is aborted and the app sees the disconnect at once. A
  client that reads, however slowly, makes them fall, so a live watcher is never cut.
- Shutdown. On SIGTERM uvicorn stops accepting connections and waits for every response to
  finish; an event stream (a phone following the class, a dashboard following a run) never
  finishes, so the server never exited. Here the event streams in progress (a GET whose response
  is streamed, Content-Type text/event-stream) are ended at once, cleanly (the last chunk sent, then
  the connection closed): the browser's EventSource reconnects to the restarted server and nothing
  is lost (every answer is in the database). Other responses finish as before; `python -m app`
  also gives them a deadline (SHUTDOWN_GRACE_S).
- uvicorn's own 400 for a request it cannot parse (a URL or header past its limits) is plain
  text without the security headers; here it is the app's JSON error shape with them.

The timeouts come from the settings (PLAYGROUND_* environment, which `python -m app` fills), read
once per process. Built on uvicorn's httptools protocol, or its h11 protocol where httptools is
not installed; `uvicorn app.main:app` without `--http app.protocol:GuardedProtocol` keeps uvicorn's
behaviour.
"""
from __future__ import annotations

import asyncio
import struct
from functools import lru_cache

from .errors import body as error_body
from .security import HEADERS

try:  # the kernel's unsent/unacknowledged byte count of a socket (Linux)
    import fcntl
    import termios

    _TIOCOUTQ = termios.TIOCOUTQ
except (ImportError, AttributeError):  # pragma: no cover - not Linux
    _TIOCOUTQ = None

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _Base
except ImportError:  # pragma: no cover - uvicorn without httptools
    from uvicorn.protocols.http.h11_impl import H11Protocol as _Base


SHUTDOWN_GRACE_S = 4  # then uvicorn cancels what is still running (a long generation), so SIGTERM ends in time


@lru_cache(maxsize=1)
def _timeouts() -> tuple[float, float]:
    from .config import Settings

    s = Settings()
    return s.header_timeout_s, s.send_timeout_s


class GuardedProtocol(_Base):
    header_timeout_s: float | None = None  # None: from the settings
    send_timeout_s: float | None = None

    def connection_made(self, transport) -> None:  # type: ignore[override]
        if self.header_timeout_s is None or self.send_timeout_s is None:
            header, send = _timeouts()
            self.header_timeout_s = header if self.header_timeout_s is None else self.header_timeout_s
            self.send_timeout_s = send if self.send_timeout_s is None else self.send_timeout_s
        self._header_timer: asyncio.TimerHandle | None = None
        self._stall_timer: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._arm_header_timer()

    # ---- shutdown
    def shutdown(self) -> None:
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete and getattr(cycle, "event_stream", False):
            # As if the client had gone: the app's next send is dropped, and its receive() answers
            # http.disconnect, so the stream's generator ends (without an error) and so does its task.
            cycle.disconnected = True
            cycle.message_event.set()
            if not self.transport.is_closing():
                self.transport.write(b"0\r\n\r\n")  # the chunked body's end: a clean end of the stream
                self.transport.close()
            return
        super().shutdown()

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and cycle.scope.get("method") == "GET":
            send = cycle.send

            async def watched(message, cycle=cycle, send=send):
                if message["type"] == "http.response.start":
                    cycle.event_stream = any(name.lower() == b"content-type" and value.startswith(b"text/event-stream")
                                             for name, value in message.get("headers", []))
                await send(message)

            cycle.send = watched

    # ---- header timeout
    def _arm_header_timer(self) -> None:
        """The next request's headers get header_timeout_s from now. One timer per connection: after
        a response only the time is noted (a cancelled and a new timer per response cost ~17k
        instructions); the timer, when it fires early, waits again for the rest."""
        if self.header_timeout_s:
            self._header_since = self.loop.time()
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(self.header_timeout_s, self._header_timeout)

    def _header_timeout(self) -> None:
        self._header_timer = None
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            return  # a request is being served: its headers did arrive (its response arms it again)
        left = self._header_since + self.header_timeout_s - self.loop.time()
        if left > 0:  # a response ended since the timer was set: the time counts from then
            self._header_timer = self.loop.call_later(left, self._header_timeout)
            return
        if not self.transport.is_closing():
            self.transport.abort()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_header_timer()  # the next request's headers get the same time

    # ---- write stall
    def pause_writing(self) -> None:
        super().pause_writing()
        self._cancel(self._stall_timer)
        if self.send_timeout_s:
            self._stall_pending = self._pending_bytes()
            self._stall_since = self.loop.time()
            self._stall_timer = self.loop.call_later(self.send_timeout_s / 4, self._check_stall)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._cancel(self._stall_timer)
        self._stall_timer = None

    def _pending_bytes(self) -> int:
        """Bytes not yet taken by the client: our buffer, plus the kernel's unacknowledged send
        queue where it can be read (Linux). The client's reading makes this fall even while the
        kernel keeps the writes paused: a large socket buffer drains in steps."""
        pending = self.transport.get_write_buffer_size()
        sock = self.transport.get_extra_info("socket")
        if sock is not None and _TIOCOUTQ is not None:
            try:
                out = fcntl.ioctl(sock.fileno(), _TIOCOUTQ, b"\0\0\0\0")
                pending += struct.unpack("i", out)[0]
            except (OSError, ValueError):
                pass
        return pending

    def _check_stall(self) -> None:
        """While writes are paused: cut the connection once nothing drained for send_timeout_s."""
        self._stall_timer = None
        if self.transport.is_closing() and not self.transport.get_write_buffer_size():
            return
        now, pending = self.loop.time(), self._pending_bytes()
        if pending < self._stall_pending:  # the client took some: it is reading
            self._stall_pending, self._stall_since = pending, now
        if now - self._stall_since >= self.send_timeout_s:
            self.transport.abort()  # connection_lost tells the app its client is gone
            return
        self._stall_timer = self.loop.call_later(self.send_timeout_s / 4, self._check_stall)

    def connection_lost(self, exc) -> None:
        self._cancel(self._header_timer)
        self._cancel(self._stall_timer)
        super().connection_lost(exc)

    @staticmethod
    def _cancel(timer: asyncio.TimerHandle | None) -> None:
        if timer is not None:
            timer.cancel()

    # ---- the parser's own 400, in the app's shape
    def send_400_response(self, msg: str) -> None:
        data = error_body("the server could not read this request (is the URL or a header too long? "
                          "long prompts go in a POST body)")
        head = [b"HTTP/1.1 400 Bad Request", b"content-type: application/json",
                b"content-length: " + str(len(data)).encode(), b"connection: close",
                *(name.encode() + b": " + value.encode() for name, value in HEADERS.items())]
        self.transport.write(b"\r\n".join(head) + b"\r\n\r\n" + data)
        self.transport.close()
