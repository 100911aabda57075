"""Admission control: a cap on model requests in flight, as a pure ASGI middleware.

A classroom can fire far more requests at once than two cores can serve. Without a cap every
request is accepted and waits its turn for a model run, so latency grows without bound and each
waiting request holds memory. Here, once `max_in_flight` inference requests are in flight, the
next one is answered at once with 503 + Retry-After, before its body is read.

A request counts only while it can use the model, so that a slow client cannot hold a slot:
- from the moment its body has arrived in full (a body dribbled in one byte at a time holds no
  slot; app/middleware.py limits how long it may take), and it is checked against the cap again
  then;
- except while the app waits for the client to take response bytes (a stream whose reader does
  not read holds no slot while it is blocked; app/protocol.py cuts such a connection after
  send_timeout_s).

Generations (POST /api/generate and the streams, up to 1000 model runs each) may hold only
`generation_share` of the slots: 64 streams opened at once, read or not, would otherwise be legitimate
model work that fills every slot for a minute while the rest of the class gets 503. Inside the
slots, app/tasks/gpt.py makes a generation take its turns at the model a chunk of characters at a
time, so that neither kind starves the other.

Only inference counts: POST /api/* and the generation stream (GET), except the APIs that run no
model: training runs and fine-tune jobs (/api/runs, /api/finetunes: starting, cancelling; their token
checks answer at once and must never hold a model slot, or a token guesser would lock the class
out) and class sessions (/api/sessions: database work). Health, model cards, quiz items, pages,
static files and other GET streams (a training run's events) are never refused.
There is deliberately no per-IP limit on model work: a whole class shares one address behind the
school's NAT. (Guessing and flooding are budgeted per address: app/limits.py.)
The count is per server process (per worker).
"""
from __future__ import annotations

from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import send_error

STREAM_PATH = "/api/generate/stream"
GENERATION_PATHS = frozenset({"/api/generate", STREAM_PATH})
NO_MODEL_WORK = ("/api/runs", "/api/finetunes", "/api/sessions")  # POSTs that run no model


def is_inference(scope: Scope) -> bool:
    """Requests that run a model: every POST under /api/, and the streamed generation by GET."""
    path = scope.get("path", "")
    if not path.startswith("/api/") or path.startswith(NO_MODEL_WORK):
        return False
    return scope.get("method") == "POST" or path == STREAM_PATH


def is_generation(scope: Scope) -> bool:
    return scope.get("path", "") in GENERATION_PATHS


def has_body(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"transfer-encoding":
            return True
        if name == b"content-length":
            return value.strip() not in (b"0", b"")
    return False


@dataclass
class AdmissionState:
    """Shared with the app (app.state.admission) so tests and operators can read the counts."""

    max_in_flight: int  # 0 = no cap
    generation_share: float = 0.5  # of max_in_flight that generations may hold
    retry_after_s: int = 1
    in_flight: int = 0
    generations: int = 0  # of in_flight
    peak: int = 0
    admitted: int = 0
    rejected: int = 0

    @property
    def max_generations(self) -> int:
        return max(1, int(self.max_in_flight * self.generation_share))

    def full(self, generation: bool = False) -> bool:
        if not self.max_in_flight:
            return False
        return self.in_flight >= self.max_in_flight or (generation and self.generations >= self.max_generations)

    def add(self, generation: bool, n: int = 1) -> None:
        self.in_flight += n
        if generation:
            self.generations += n


class Busy(Exception):
    """Raised into the app's body read when the cap filled while the body was arriving."""


class AdmissionControl:
    def __init__(self, app: ASGIApp, state: AdmissionState):
        self.app, self.state = app, state
        self._detail = (f"the server is busy (more than {state.max_in_flight} model requests at once); "
                        f"try again in {state.retry_after_s} s")

    async def _reject(self, send: Send, generation: bool) -> None:
        state = self.state
        state.rejected += 1
        detail = self._detail
        if generation and state.generations >= state.max_generations:
            detail = (f"the server is busy (more than {state.max_generations} generations at once); "
                      f"try again in {state.retry_after_s} s")
        await send_error(send, 503, detail, None, {"Retry-After": str(state.retry_after_s)})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_inference(scope):
            await self.app(scope, receive, send)
            return
        state = self.state
        generation = is_generation(scope)
        if state.full(generation):  # refused before a byte of its body is read
            await self._reject(send, generation)
            return
        # One event loop per process: the checks and the counts need no lock.
        counted = False
        busy = False
        started = False

        def count() -> None:
            nonlocal counted
            counted = True
            state.add(generation)
            state.admitted += 1
            state.peak = max(state.peak, state.in_flight)

        async def counting_receive() -> Message:
            nonlocal busy
            message = await receive()
            if not counted and message["type"] == "http.request" and not message.get("more_body", False):
                if state.full(generation):  # the slots filled while this body was arriving
                    busy = True
                    raise Busy()
                count()
            return message

        async def uncounted_send(message: Message) -> None:
            nonlocal started
            if busy and not started:
                return  # the 503 below replaces whatever the app made of the aborted read
            if message["type"] == "http.response.start":
                started = True
            if counted and message["type"] == "http.response.body" and message.get("more_body", False):
                # While the client is slow to take the bytes, the request does not hold a slot.
                state.add(generation, -1)
                try:
                    await send(message)
                finally:
                    state.add(generation)
            else:
                await send(message)

        if not has_body(scope):
            count()
        try:
            await self.app(scope, counting_receive, uncounted_send)
        except Busy:
            pass
        finally:
            if counted:
                state.add(generation, -1)
        if busy and not started:
            await self._reject(send, generation)
