"""A fair budget for writing to a class session (POST .../answers, and POST .../join from a browser that
already holds the session's cookie), so that one joined student looping answers (each a 409) or its
own join cannot queue the class's answers behind its own: every write takes the one write lock of
the class database (app/classes/db.py), so a loop of them on 8 connections took the class's answer
p99 from 26-53 ms to 100-435 ms (issue 53).

Who pays is decided as for reads (app/classes/readers.py Readers.who, which this module reuses): a
request with a student's participant cookie (remembered at the join, or checked once from the
address's checks) spends that student's own budget: WRITE_BURST writes at once, then one every
WRITE_EVERY_S. Anything else (an answer without a cookie, a join with a cookie that is no student's)
spends its address's budget: ADDRESS_WRITE_BURST at once, then one every ADDRESS_WRITE_EVERY_S. A
join with no cookie at all is a new nickname and is left to the address's budget of new nicknames
(app/classes/guard.py), so a class joining behind one address is budgeted as before; only when it is
refused after its write (the nickname taken: guard.py gives the new nickname back) does it spend one
of its address's writes, so a script looping a taken nickname is refused past that budget too. Over a budget:
429 naming `code`, with Retry-After, answered after WRITE_REFUSAL_PAUSE_S (1 s): only a script is
ever refused here, so holding its refusal costs no student anything, and a loop on N connections
then sends at most N writes a second, each refused on the event loop without a database. (Each
refused request still costs the server some CPU: at the reads' 0.1 s pause, 8 connections sent ~40
writes a second, and the class's answers waited for the server's share of the machine.)

The numbers leave a wide margin to a real student, who is never refused: one answer per item (an
NSP pair, a concept question: a few a minute), a double-tap (2 at once), a rejoin after a reload
(1), and the fastest case, Label together, where every line is open at once and a quick student
taps about one line a second. 30 at once, then 3 a second, covers a student double-tapping every one
of those taps, forever. A loop past the burst gets 3 writes a second: far too few to slow a class.
Per server process, like every limit here."""
from __future__ import annotations

import asyncio

from anyio import to_thread
from fastapi import Request

from ..errors import ApiError
from ..limits import PerClient, client_address, clock, retry_after
from .codes import cookie_name
from .readers import readers

WRITE_BURST, WRITE_EVERY_S = 30, 1 / 3  # a student: 30 at once, then 3 a second
ADDRESS_WRITE_BURST, ADDRESS_WRITE_EVERY_S = 120, 0.1  # no student's cookie: 120 at once, then 10 a second
WRITE_REFUSAL_PAUSE_S = 1.0  # a refused write is answered this much later (its Retry-After is at least 1 s too)


class Writers:
    def __init__(self, clock=clock, pause_s: float = WRITE_REFUSAL_PAUSE_S):
        self.pause_s = pause_s
        self.students = PerClient(WRITE_BURST, WRITE_EVERY_S, clock=clock)
        self.addresses = PerClient(ADDRESS_WRITE_BURST, ADDRESS_WRITE_EVERY_S, clock=clock)

    def check_refused_joins(self, request: Request) -> None:
        """A join with no cookie: 429 when its address's refused joins (below) have spent the address's
        write budget. Spends nothing: a join that gets in is the new-nickname budget's (guard.py)."""
        wait = self.addresses.wait_s("address " + client_address(request))
        if wait > 0:
            raise _refusal(wait, "network")

    def refused_join(self, request: Request) -> None:
        """A join with no cookie that was refused after its write (a nickname taken: 409) spends one of
        its address's writes; guard.py gives its new-nickname back, so a loop of them was unbudgeted."""
        self.addresses.spend("address " + client_address(request))

    def write(self, request: Request, code: str, db) -> None:
        """Spend one write of this student (or of its address): 429 naming `code` when it is spent."""
        key = readers(request).who(request, code, db, lambda address: _take(self.addresses, address, "network"))
        if key.startswith("student "):
            _take(self.students, key, "browser")


def _take(budget: PerClient, key: str, where: str) -> None:
    wait = budget.take(key)
    if wait > 0:
        raise _refusal(wait, where)


def _refusal(wait: float, where: str) -> ApiError:
    retry = retry_after(wait)
    return ApiError(f"too many answers or joins for this class came from this {where} in a short time; "
                    f"try again in {retry} s", "code", status=429, headers={"Retry-After": retry})


async def spend_write(request: Request, code: str, db, joining: bool = False) -> None:
    """Writers.write for a request (`code` in its stored form): on the event loop when the cookie is
    already known (every refused loop), in a thread when it must be looked up; a refusal is answered
    after the budget's pause_s. A join without the session's cookie spends nothing here (guard.py's),
    but is refused once its address's refused joins have spent the address's writes."""
    budget = writers(request)
    try:
        if joining and not request.cookies.get(cookie_name(code)):
            budget.check_refused_joins(request)
        elif readers(request).needs_db(request, code):
            await to_thread.run_sync(budget.write, request, code, db)
        else:
            budget.write(request, code, db)
    except ApiError as e:
        if e.status == 429:
            await asyncio.sleep(budget.pause_s)
        raise


def writers(request: Request) -> Writers:
    state = request.app.state
    if getattr(state, "class_writers", None) is None:
        state.class_writers = Writers()
    return state.class_writers
