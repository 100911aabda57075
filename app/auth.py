"""The instructor token: who may start, cancel and delete training runs.

- The token comes from --instructor-token / PLAYGROUND_INSTRUCTOR_TOKEN; when unset, `python -m app`
  makes a random one at startup and prints it once with a login URL (as Jupyter does), and hands
  it to every worker through the environment.
- API clients send `Authorization: Bearer <token>`.
- Browsers log in once: the login URL carries the token in its #fragment (never sent to the server,
  never in its logs); /login's script drops it from the address bar and POSTs it to /login, which
  answers with an HttpOnly, SameSite=Strict session cookie and a redirect to /train. The cookie
  holds an HMAC of the token, not the token, and is accepted for state-changing requests only
  when the browser says they come from this site (Origin / Sec-Fetch-Site): cross-site request
  forgery needs both the cookie and a same-site origin.
- Comparisons are constant time; every wrong token makes the next answers slower (up to
  MAX_DELAY_S) so guessing is slow. Without a token: 401; with a wrong one: 403.
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
import time
from typing import Annotated

from fastapi import Depends, Request

from .errors import ApiError

COOKIE = "pp_instructor"
MAX_DELAY_S = 5.0
FAIL_WINDOW_S = 300.0


def new_token() -> str:
    return secrets.token_urlsafe(24)


def session_value(token: str) -> str:
    return hmac.new(token.encode(), b"pretraining-playground instructor session", hashlib.sha256).hexdigest()


def same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


class Throttle:
    """Wrong guesses in the last FAIL_WINDOW_S seconds (per process): each adds delay to the next
    failed answer, 0.25 s doubling up to MAX_DELAY_S. Not per address: a class shares one NAT."""

    def __init__(self):
        self.failures: list[float] = []

    def delay(self) -> float:
        now = time.monotonic()
        self.failures = [t for t in self.failures if now - t < FAIL_WINDOW_S][-50:]
        self.failures.append(now)
        return min(MAX_DELAY_S, 0.25 * 2 ** (len(self.failures) - 1))


def settings_token(request: Request) -> str | None:
    return request.app.state.settings.instructor_token


def throttle(request: Request) -> Throttle:
    state = request.app.state
    if getattr(state, "auth_throttle", None) is None:
        state.auth_throttle = Throttle()
    return state.auth_throttle


def same_site(request: Request) -> bool:
    """True unless the browser says the request comes from another site. Browsers send
    Sec-Fetch-Site on every request; Origin is only a fallback for older ones (with this server's
    Referrer-Policy: no-referrer, a same-origin form or fetch POST carries `Origin: null`)."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None:
        return fetch_site in ("same-origin", "none")
    origin = request.headers.get("origin")
    if origin is None:  # not a browser (curl with the cookie): nothing to forge
        return True
    return origin != "null" and origin.split("://", 1)[-1] == request.headers.get("host", "")


async def fail(request: Request, status: int, detail: str):
    await asyncio.sleep(throttle(request).delay())
    raise ApiError(detail, "token", status=status)


def is_instructor(request: Request) -> bool:
    """For pages: does this browser hold a valid session cookie? (No throttling: no guess made.)"""
    token = settings_token(request)
    cookie = request.cookies.get(COOKIE)
    return bool(token and cookie and same(cookie, session_value(token)))


async def require_instructor(request: Request) -> None:
    token = settings_token(request)  # always set: create_app makes one when none is given
    header = request.headers.get("authorization", "")
    if header:
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            await fail(request, 401, "send the instructor token as 'Authorization: Bearer <token>'")
        if not same(given.strip(), token):
            await fail(request, 403, "the instructor token is wrong")
        return
    cookie = request.cookies.get(COOKIE)
    if cookie is None:
        raise ApiError("only the instructor may do this: log in at /login or send 'Authorization: Bearer <token>'",
                       "token", status=401)
    if not same(cookie, session_value(token)):
        await fail(request, 403, "the instructor session is not valid (the token changed?); log in again at /login")
    if not same_site(request):
        raise ApiError("instructor requests must come from this site's own pages", "token", status=403)


InstructorDep = Annotated[None, Depends(require_instructor)]
