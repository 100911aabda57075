"""The instructor: who may start, cancel and delete training runs.

- The token comes from --instructor-token / PLAYGROUND_INSTRUCTOR_TOKEN; when unset, `python -m app`
  makes a random one at startup and prints it once with a login URL (as Jupyter does), and hands
  it to every worker through the environment.
- API clients send `Authorization: Bearer <token>`.
- Browsers log in once: the login URL carries the token in its #fragment (never sent to the server,
  never in its logs); /login's script drops it from the address bar and POSTs it to /login, which
  answers with an HttpOnly, SameSite=Strict session cookie and a redirect to /teach. Each login
  gets its own random session value; the server keeps only a keyed hash of it (DATA_DIR/sessions.json,
  shared by the workers), so logout revokes that login alone, and a new token revokes them all.
  The cookie is accepted for state-changing requests (and logout) only when the browser says they
  come from this site (Sec-Fetch-Site / Origin): cross-site forgery needs both.
- Guessing is capped per client address (app/limits.py): each address may get GUESS_BURST wrong
  answers at once, then one per GUESS_EVERY_S; while its budget is spent, that address's wrong
  tokens answer 429 (with Retry-After). A global ceiling (GLOBAL_BURST, then one per
  GLOBAL_EVERY_S) bounds guesses spread over many addresses, but never refuses an address that has
  not guessed wrong lately. The right token (Bearer or POST /login) is compared first and always
  works, whatever its address spent: a teacher behind a guesser's NAT gets in (issue 53), and a
  guesser learns nothing from a 429 it could not learn from a 403. A logged-in browser (a valid
  session cookie) is never counted at all.
- A session cookie that is no longer valid (logged out, expired, the token changed) is refused
  without spending anything: its value is a random 256-bit secret, not a guess, and a tab holding
  an old cookie must not use up anyone's budget. A wrong token never waits inside the server, and
  these requests hold no model slot (app/admission.py), so a guesser cannot lock the class out.
"""
from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import time
from contextlib import suppress
from pathlib import Path
from typing import Annotated, NamedTuple

from fastapi import Depends, Request

from .errors import ApiError
from .limits import PerClient, client_address, retry_after

COOKIE = "pp_instructor"
GUESS_BURST = 10  # wrong answers allowed at once, per client address
GUESS_EVERY_S = 6.0  # then one per this many seconds (10 a minute) for that address
GLOBAL_BURST = 60  # wrong answers from every address together (quiet addresses are never refused)
GLOBAL_EVERY_S = 1.0
SESSION_TTL_S = 12 * 3600  # a school day


def new_token() -> str:
    return secrets.token_urlsafe(24)


TOKEN_FILE = "instructor_token"
KEPT_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,}")  # what new_token writes (URL-safe base64); anything else is replaced


class KeptToken(NamedTuple):
    token: str
    made: bool  # made now (none was kept, or `renew`)
    unsaved: str | None = None  # why a token made now could not be kept (None: it is in the file)


def kept_token(folder: Path, renew: bool = False) -> KeptToken:
    """The instructor token kept in the data folder. The file is the owner's only (0600, tightened
    if found looser), so a restart keeps the token and every login made with it; a new token only
    when there is none, the file holds anything but a token this code writes (not UTF-8, NUL bytes,
    spaces: KEPT_TOKEN), or `renew` asks (which logs every browser out). A place that cannot hold it
    (the data folder is a file, `instructor_token` is a folder, a read-only disk): a fresh token for
    this start only, with `unsaved` saying why, so that the start-up line does not call it kept."""
    path = Path(folder) / TOKEN_FILE
    if not renew:
        try:
            token = path.read_text(encoding="utf-8").strip()
            if KEPT_TOKEN.fullmatch(token):  # one this code wrote (a crash can leave NUL bytes: not a token)
                if path.stat().st_mode & 0o077:
                    path.chmod(0o600)
                return KeptToken(token, False)
        except (OSError, UnicodeDecodeError):  # unreadable, or not UTF-8 (not a token this code wrote): a new one
            pass
    token = new_token()
    tmp = path.with_name(f".{TOKEN_FILE}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(token + "\n")
        os.replace(tmp, path)
    except OSError as e:
        with suppress(OSError):  # no stray copy of the token left beside what could not hold it
            tmp.unlink(missing_ok=True)
        return KeptToken(token, True, e.strerror or type(e).__name__)
    return KeptToken(token, True)


def valid_text(value: str) -> bool:
    """Can `value` be written as UTF-8? (JSON may carry a lone surrogate, "\\ud800", which cannot.)"""
    try:
        value.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def same(a: str, b: str) -> bool:
    """Constant-time equality of any two strings, the one such compare of the app (tokens, rejoin
    codes). compare_digest takes ASCII strings only (a TypeError on "É", a 500) and answers at once
    when lengths differ, so both sides are compared as SHA-256 digests: bytes of one fixed length."""
    def digest(text: str) -> bytes:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()  # a lone surrogate too
    return hmac.compare_digest(digest(a), digest(b))


class Sessions:
    """Logged-in browsers: keyed hashes of their session values with an expiry, in a JSON file
    every worker reads (re-read when it changes). Without a writable data folder: this process only."""

    def __init__(self, folder: Path, token: str):
        self.path, self.key = Path(folder) / "sessions.json", token.encode()
        self.memory: dict[str, float] = {}
        self.seen: tuple | None = None

    def _hash(self, value: str) -> str:
        return hmac.new(self.key, value.encode(), hashlib.sha256).hexdigest()

    def _load(self) -> dict[str, float]:
        try:
            st = self.path.stat()
        except OSError:
            return self.memory
        if self.seen != (st.st_mtime_ns, st.st_size):
            try:
                self.memory = {k: float(v) for k, v in json.loads(self.path.read_text()).items()}
                self.seen = (st.st_mtime_ns, st.st_size)
            except (OSError, ValueError, AttributeError, TypeError):  # not {value hash: expiry}: no logins kept
                pass
        return self.memory

    def _change(self, key: str, expires: float | None) -> None:
        now = time.time()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path.with_suffix(".lock"), "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                self.seen = None
                sessions = {k: v for k, v in self._load().items() if v > now}
                sessions.pop(key, None) if expires is None else sessions.__setitem__(key, expires)
                tmp = self.path.with_name(f".sessions.{os.getpid()}.tmp")
                try:
                    tmp.write_text(json.dumps(sessions))
                    tmp.replace(self.path)
                finally:
                    tmp.unlink(missing_ok=True)
                self.memory = sessions
        except OSError:  # no writable data folder: this process remembers it
            self.memory.pop(key, None) if expires is None else self.memory.__setitem__(key, expires)

    def new(self) -> str:
        value = secrets.token_urlsafe(32)
        self._change(self._hash(value), time.time() + SESSION_TTL_S)
        return value

    def valid(self, value: str) -> bool:
        return self._load().get(self._hash(value), 0) > time.time()

    def revoke(self, value: str) -> None:
        self._change(self._hash(value), None)


def settings_token(request: Request) -> str | None:
    return request.app.state.settings.instructor_token


def throttle(request: Request) -> PerClient:
    state = request.app.state
    if getattr(state, "auth_throttle", None) is None:
        state.auth_throttle = PerClient(GUESS_BURST, GUESS_EVERY_S, GLOBAL_BURST, GLOBAL_EVERY_S)
    return state.auth_throttle


def sessions(request: Request) -> Sessions:
    state, token = request.app.state, settings_token(request) or ""
    if getattr(state, "sessions", None) is None or state.sessions.key != token.encode():
        state.sessions = Sessions(state.settings.data_dir, token)
    return state.sessions


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


def check_guess(request: Request, ok, status: int, detail: str) -> None:
    """Run the check `ok()` (a constant-time compare) first: the right token passes whatever this
    address spent, so a guesser sharing the teacher's address (a school NAT) cannot lock the teacher
    out, and answering it tells a guesser nothing it needed to guess. A wrong one is refused with 429
    while this address's budget is spent (nothing spent more), else it spends one guess and gets
    `status`. No await inside: concurrent requests cannot all pass the budget check before one spends."""
    if ok():
        return
    t, client = throttle(request), client_address(request)
    wait = t.wait_s(client)
    if wait > 0:
        retry = retry_after(wait)
        raise ApiError(f"too many wrong instructor tokens from this address lately; try again in {retry} s", "token",
                       status=429, headers={"Retry-After": retry})
    t.spend(client)
    raise ApiError(detail, "token", status=status)


def is_instructor(request: Request) -> bool:
    """For pages: does this browser hold a valid session cookie? (No guess counted.)"""
    cookie = request.cookies.get(COOKIE)
    return bool(settings_token(request) and cookie and sessions(request).valid(cookie))


async def require_instructor(request: Request) -> None:
    token = settings_token(request)  # always set: create_app makes one when none is given
    header = request.headers.get("authorization", "")
    if header:
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            raise ApiError("send the instructor token as 'Authorization: Bearer <token>'", "token", status=401)
        check_guess(request, lambda: same(given.strip(), token), 403, "the instructor token is wrong")
        return
    cookie = request.cookies.get(COOKIE)
    if cookie is None:
        raise ApiError("only the instructor may do this: log in at /login or send 'Authorization: Bearer <token>'",
                       "token", status=401)
    if not same_site(request):
        raise ApiError("instructor requests must come from this site's own pages", "token", status=403)
    if not sessions(request).valid(cookie):  # a random 256-bit value: an old tab, not a guess; nothing spent
        raise ApiError("the instructor session is not valid (logged out, expired, or the token changed); "
                       "log in again at /login", "token", status=403)


InstructorDep = Annotated[None, Depends(require_instructor)]
