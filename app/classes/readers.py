"""Fair budgets for reading a class session (GET the state or the results) and for following it
(its event stream), so that one address looping reads or opening streams by the thousand cannot
slow the class down, even a class behind that same address (a school's NAT).

A student who has joined is budgeted as a student, not as an address: a request with this
session's participant cookie, once the cookie is known to be a student's (remembered at the join, or
checked with one database read, then remembered for KNOWN_S), spends that student's own budget:
READ_BURST reads at once, then one every READ_EVERY_S, and at most STREAMS_PER_STUDENT streams open.
A cookie not yet known is checked from a budget of checks per address (as large as the reads', but
its own, so a read loop does not stop a student's check); a made-up cookie then counts as its
address. Everything else from an address (no cookie, a made-up one) shares that address's budget:
ADDRESS_BURST reads at once, then one every ADDRESS_EVERY_S, and at most STREAMS_PER_ADDRESS streams
open. What is left to a guesser: flooding made-up cookies spends that address's checks, so a student
of it whose cookie the server does not know yet (after a restart) waits for the budget to refill. The instructor (a logged-in browser, the projector) is
never budgeted here. Over a budget: 429 naming `code`, with Retry-After.

A class of 60 phones reads the state once per move of the teacher (its stream says when) and the
results once per reveal: far below a student's budget. One address looping reads spends its own
address budget, never the students' (each has its own); opening streams by the thousand stops at
STREAMS_PER_ADDRESS. Per server process, like every limit here."""
from __future__ import annotations

import threading

from fastapi import Request

from ..errors import ApiError
from ..limits import PerClient, clock, client_address, retry_after
from .codes import cookie_name
from .service import has_joined

READ_BURST, READ_EVERY_S = 30, 0.2  # a student: 30 at once, then 5 a second
ADDRESS_BURST, ADDRESS_EVERY_S = 120, 1 / 30  # everything else from one address: 120 at once, then 30 a second
STREAMS_PER_STUDENT, STREAMS_PER_ADDRESS = 4, 8
KNOWN_S = 12 * 3600.0  # a checked cookie is remembered this long (a class session's default life)
KNOWN_MAX = 20_000


class Readers:
    def __init__(self, clock=clock):
        self.students = PerClient(READ_BURST, READ_EVERY_S, clock=clock)
        self.addresses = PerClient(ADDRESS_BURST, ADDRESS_EVERY_S, clock=clock)
        self.checks = PerClient(ADDRESS_BURST, ADDRESS_EVERY_S, clock=clock)
        self.known: dict[tuple[str, str], float] = {}  # (code, cookie) -> checked until
        self.open: dict[str, int] = {}  # a student's or an address's key -> streams open
        self.clock, self.lock = clock, threading.Lock()

    def _remembered(self, code: str, cookie: str) -> bool:
        with self.lock:
            return self.known.get((code, cookie), 0.0) > self.clock()

    def remember(self, code: str, cookie: str) -> None:
        """A student who just joined (app/classes/router.py): known from the first read."""
        self._remember(code, cookie)

    def _remember(self, code: str, cookie: str) -> None:
        with self.lock:
            if len(self.known) >= KNOWN_MAX:
                self.known.clear()
            self.known[(code, cookie)] = self.clock() + KNOWN_S

    def who(self, request: Request, code: str, db, pay) -> str:
        """The budget's key: "student <cookie>" for a student (an unknown cookie checked from the
        address's checks), else "address <address>" (paid by `pay`)."""
        cookie = request.cookies.get(cookie_name(code))
        if cookie and self._remembered(code, cookie):
            return "student " + cookie
        address = "address " + client_address(request)
        if cookie:
            _take(self.checks, address)
            if has_joined(db, code, cookie):
                self._remember(code, cookie)
                return "student " + cookie
        pay(address)
        return address

    def needs_db(self, request: Request, code: str) -> bool:
        """Whether a read must look a cookie up in the database (one not known yet); otherwise read()
        touches no database and runs on the event loop (spend_read)."""
        cookie = request.cookies.get(cookie_name(code))
        return bool(cookie) and not self._remembered(code, cookie)

    def read(self, request: Request, code: str, db) -> None:
        """Spend one read (429 naming `code` when the budget is spent)."""
        key = self.who(request, code, db, lambda address: _take(self.addresses, address))
        if key.startswith("student "):
            _take(self.students, key)

    def stream(self, request: Request, code: str, db) -> "Slot":
        """One open stream held until the slot's release (429 naming `code` when too many are open).
        Taken before the stream starts (a dependency), released when it ends (its generator's finally)."""
        key = self.who(request, code, db, lambda address: _take(self.addresses, address))
        cap = STREAMS_PER_STUDENT if key.startswith("student ") else STREAMS_PER_ADDRESS
        with self.lock:
            if self.open.get(key, 0) >= cap:
                raise ApiError(f"too many live connections to this class are open from "
                               f"{'this browser' if cap == STREAMS_PER_STUDENT else 'this network'} ({cap}); "
                               "close other tabs of it", "code", status=429, headers={"Retry-After": "5"})
            self.open[key] = self.open.get(key, 0) + 1
        return Slot(self, key)


class Slot:
    def __init__(self, owner: Readers, key: str):
        self.owner, self.key, self.held = owner, key, True

    def release(self) -> None:
        with self.owner.lock:
            if self.held:
                self.held = False
                self.owner.open[self.key] -= 1
                if not self.owner.open[self.key]:
                    del self.owner.open[self.key]


def _take(budget: PerClient, key: str) -> None:
    wait = budget.take(key)
    if wait > 0:
        retry = retry_after(wait)
        raise ApiError(f"too many requests for this class came from here in a short time; try again in {retry} s",
                       "code", status=429, headers={"Retry-After": retry})


# A refused read is answered after this pause: a loop of reads from one address (the issue-43 attack:
# 16 connections, ~700 requests a second) then costs the server ~1/10 of the requests, and a sleeping
# coroutine costs nothing while the class's answers go on.
REFUSAL_PAUSE_S = 0.1


async def spend_read(request: Request, code: str, db) -> None:
    """Readers.read for a request: without a thread hop where no database is needed (no cookie, or one
    already known: every refused loop of reads), and a refusal answered after REFUSAL_PAUSE_S."""
    import asyncio

    from anyio import to_thread

    budget = readers(request)
    try:
        if budget.needs_db(request, code):
            await to_thread.run_sync(budget.read, request, code, db)
        else:
            budget.read(request, code, db)
    except ApiError as e:
        if e.status == 429:
            await asyncio.sleep(REFUSAL_PAUSE_S)
        raise


def readers(request: Request) -> Readers:
    state = request.app.state
    if getattr(state, "class_readers", None) is None:
        state.class_readers = Readers()
    return state.class_readers
