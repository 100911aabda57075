"""The door: how a class behind one address gets in while someone on that address guesses codes.

First of all by the QR code: its link carries the session's join key (app/classes/joinkey.py), and a
join with the right key is let past a spent address and never reaches the door. The door is for the
student who typed the code (the address on the projector, no scan): their join cannot be told apart
from a guess.

A school's phones often share one public address (a NAT). Once that address has spent its code
guesses (app/classes/guard.py), a join from it can no longer be answered by whether its code is
right: a different answer for the right code would tell the guesser which code is right, at no
cost, as fast as it can ask. So every join from that address gets the same 429 (the same words,
the same Retry-After), right code or wrong, and a join with the right code also knocks: its
nickname waits at the door, the teacher sees it (GET the session: `door`, the teacher's only) and
lets the door in (PUT .../state {"let_in_door": true}: each nickname becomes a let-in one, as
`admit` makes it), and the student's page, which tries again by itself, gets in with the next try.

Timing (issue 53): the two answers are the same 429 but not the same work. A right code's join
reads the session's row twice (its plan decoded each time) and queues a knock, written on a thread
of its own while the answer is sent; a wrong code's finds no row. benchmarks/door_timing.py measured
the right code's p50 1.98 ms slower than the wrong code's (p10 8.1 against 6.8 ms, p90 62 against
52 ms, 388 and 394 joins on one connection, load average 18 on 2 shared cores). At that spread,
telling a right code from a wrong one takes about a thousand joins, longer than the three seconds
in which the budget answers a guess for real anyway; on a quiet server the spread is narrower and
it may take far fewer (not measured). Each such refused join, right code or wrong, spends one of
its address's writes (app/classes/writers.py: 120 at once, then 10 a second; past them a 429 before
any code is looked at), so a prober gets 10 timed tries a second: about 100 s for the thousand joins
one code takes at the measured spread, per code tried, against 23**6 codes. Not closed (that takes a
door that does the same work whatever the code: the live sessions read by one query, knocks written
at a fixed cadence), but too slow to use.

A flood of knocks cannot crowd a classmate out (the rule, app/classes/letin.py's numbers): a name
already waiting stays, and its page's next knock (it tries again every few seconds) keeps it there;
nobody waiting is ever pushed off by a newer knock. One address lists at most DOOR_PER_ADDRESS = 8
names and the door DOOR_MAX = 60 in all; a new name past either is counted (the teacher sees how
many knocked: `door_knocked`) but not listed. A name whose page stopped knocking for DOOR_STALE_S =
90 s leaves, freeing its place. So a made-up-name flood from the class's own address fills at most
that address's 8 places and never removes a classmate who knocked first; a flood from another
address cannot touch them at all; filling the whole door takes 8 addresses that have all spent
their code guesses. A classmate who arrives after a same-address flood filled its 8 places waits
until the flood's names go stale; the teacher can always type any name under Let in. "Let them in"
admits the oldest waiting names, no more than the room's free places (letin.let_in).

The guesser's odds: 23**6 = 148,035,889 codes. Its address gets CODE_BURST wrong codes at once,
then one every CODE_EVERY_S (20 a minute), and all addresses together CODE_GLOBAL_BURST, then one
every CODE_GLOBAL_EVERY_S (120 a minute); past that, answers carry nothing. With 50 classes live at
once, one guess finds one with probability 50 / 148 million: on average 2.96 million guesses,
103 days at one address's rate, 17 days at every address's together, against sessions that
expire after hours.

The key's odds: a join key is 128 random bits, 2**128 = 3.4e38 keys per session, and only a join
naming the right code can use one (a wrong code is a guess of the code, budgeted above). A wrong
key is no key: the join takes the typed code's path (this door, the same 429). Tries of keys from
a spent address are not budgeted (each wrong one is answered as a wrong code is), and need not
be: even at a million joins a second, which no server of this app answers, finding one session's
key takes on average 2**127 / 1e6 s, 5.4e24 years, against sessions that expire after hours."""
from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

from ..errors import ApiError
import time

from . import letin
from .codes import clean_nickname
from .db import Database
from .service import find

log = logging.getLogger("app")
_writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="class-door")


def is_live(db: Database, code: str) -> bool:
    """Does the code name a live session? (One read, right code or wrong.)"""
    try:
        with db.reading() as s:
            return find(s, code).ended_at is None
    except ApiError:
        return False


def admitted(db: Database, code: str, nickname: str) -> bool:
    """Has the teacher let this nickname in? False for a wrong code or a nickname that cannot be one."""
    try:
        name, key = clean_nickname(nickname)
        with db.reading() as s:
            return letin.is_admitted(find(s, code).plan or {}, name, key)
    except ApiError:
        return False


def knock(db: Database, code: str, nickname: str, address: str) -> None:
    """Put the nickname at the door of a live session, after the answer (a thread of its own)."""
    _writer.submit(_knock, db, code, nickname, address, time.time())


def _knock(db: Database, code: str, nickname: str, address: str, at: float) -> None:
    try:
        name, key = clean_nickname(nickname)
        with db.writing() as s:
            row = find(s, code)
            plan = letin.knocked(row.plan or {}, name, key, address, at)
            if plan is not None:
                row.plan, row.version = plan, row.version + 1
    except ApiError:
        pass  # not a nickname, a session gone: nothing waits
    except Exception:  # noqa: BLE001 - a knock lost is a student who tries again, never a crash
        log.exception("class door: a knock was not written")


def settled(timeout: float = 10.0) -> None:
    """Wait until every knock asked for so far is written (the writer runs them in order)."""
    _writer.submit(lambda: None).result(timeout)
