"""Admission control: a cap on model requests in flight, as a pure ASGI middleware.

A classroom can fire far more requests at once than two cores can serve. Without a cap every
request is accepted and waits its turn for a model run, so latency grows without bound and each
waiting request holds memory. Here, once `max_in_flight` inference requests are in flight, the
next one is answered at once with 503 + Retry-After, before its body is read; admitted requests
run to the end. A streamed generation counts while its stream is open.

Only inference counts: POST /api/* and GET /api/generate/stream. Health, model cards, quiz items,
pages and static files are never refused. There is deliberately no per-IP limit: a whole class
shares one address behind the school's NAT. The count is per server process (per worker).
"""
from __future__ import annotations

from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from .errors import send_error

STREAM_PATH = "/api/generate/stream"


def is_inference(scope: Scope) -> bool:
    """Requests that run a model: every POST under /api/, and the streamed generation by GET."""
    path = scope.get("path", "")
    if not path.startswith("/api/"):
        return False
    return scope.get("method") == "POST" or path == STREAM_PATH


@dataclass
class AdmissionState:
    """Shared with the app (app.state.admission) so tests and operators can read the counts."""

    max_in_flight: int  # 0 = no cap
    retry_after_s: int = 1
    in_flight: int = 0
    peak: int = 0
    admitted: int = 0
    rejected: int = 0

    def full(self) -> bool:
        return bool(self.max_in_flight) and self.in_flight >= self.max_in_flight


class AdmissionControl:
    def __init__(self, app: ASGIApp, state: AdmissionState):
        self.app, self.state = app, state
        self._detail = (f"the server is busy (more than {state.max_in_flight} model requests at once); "
                        f"try again in {state.retry_after_s} s")

    async def _reject(self, send: Send) -> None:
        await send_error(send, 503, self._detail, None, {"Retry-After": str(self.state.retry_after_s)})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_inference(scope):
            await self.app(scope, receive, send)
            return
        state = self.state
        if state.full():
            state.rejected += 1
            await self._reject(send)
            return
        # One event loop per process: no lock needed between the check and the increment.
        state.in_flight += 1
        state.admitted += 1
        state.peak = max(state.peak, state.in_flight)
        try:
            await self.app(scope, receive, send)
        finally:
            state.in_flight -= 1
