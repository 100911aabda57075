"""Fair limits keyed by the client: token buckets per client address, with a global ceiling that
never starves a client that has not misbehaved.

Used for what a guesser or a flooder does (app/auth.py: wrong instructor tokens; app/classes/guard.py:
new nicknames and wrong join codes). Each client address has its own bucket: `burst` at once,
then one more every `every_s`. One address spending its bucket refuses that address only; the
class next to it (its own addresses) and the teacher (a right token, a logged-in browser) are
served as before.

The global ceiling (`global_burst`, `global_every_s`) bounds the sum over every address, against
a guesser that spreads over many addresses. When it is spent, an address whose own bucket is
still full (it has spent nothing lately: a quiet client) is still let through; only addresses that
have spent some of their own budget wait. So a quiet address is never refused because of others.
The price: a guesser rotating addresses gets one try per fresh address while the ceiling is
spent; on a school LAN that is a few hundred addresses, not a flood.

One event loop (or one lock) per process: `take` checks and spends at once, so concurrent requests
cannot all pass the check before one of them spends. The table of addresses is bounded
(`max_clients`): addresses whose buckets have refilled are forgotten first (a forgotten address
starts full, which is what it would be anyway). Per server process, like every limit here."""
from __future__ import annotations

import threading
import time

from starlette.requests import HTTPConnection


def client_address(conn: HTTPConnection) -> str:
    """The client's address as the server sees it (X-Forwarded-For only from --forwarded-allow-ips)."""
    client = conn.client
    return client.host if client is not None and client.host else "unknown"


class Clock:
    """The one clock every budget reads (PerClient here, app/classes/readers.py, writers.py): the
    machine's monotonic clock, unless a test makes it stand still. A standing clock moves only when
    the test says (`advance`), so a budget test states how much time passes between its requests
    instead of depending on how fast a loaded machine sends them (issue 53)."""

    def __init__(self):
        self.standing: float | None = None

    def __call__(self) -> float:
        standing = self.standing
        return time.monotonic() if standing is None else standing

    def stand(self) -> None:
        """From now on the time is now, until advance() or run()."""
        self.standing = time.monotonic()

    def advance(self, seconds: float) -> None:
        assert self.standing is not None, "advance() moves a standing clock: stand() first"
        self.standing += seconds

    def run(self) -> None:
        """Back to the machine's clock (later than the standing time: buckets only ever see time go on)."""
        self.standing = None


clock = Clock()


class Bucket:
    __slots__ = ("tokens", "t")

    def __init__(self, tokens: float, t: float):
        self.tokens, self.t = tokens, t

    def refill(self, burst: float, every_s: float, now: float) -> None:
        self.tokens = min(burst, self.tokens + max(0.0, now - self.t) / every_s)
        self.t = max(self.t, now)


class PerClient:
    def __init__(self, burst: int, every_s: float, global_burst: int | None = None,
                 global_every_s: float | None = None, max_clients: int = 10_000, clock=clock):
        self.burst, self.every_s = float(burst), every_s
        self.global_burst = float(global_burst) if global_burst else None
        self.global_every_s = global_every_s or every_s
        self.max_clients, self.clock = max_clients, clock
        self.clients: dict[str, Bucket] = {}
        self.all = Bucket(self.global_burst or 0.0, clock())
        self.lock = threading.Lock()

    def _bucket(self, client: str, now: float) -> Bucket:
        bucket = self.clients.get(client)
        if bucket is None:
            if len(self.clients) >= self.max_clients:
                self._forget(now)
            bucket = self.clients[client] = Bucket(self.burst, now)
        else:
            bucket.refill(self.burst, self.every_s, now)
        return bucket

    def _forget(self, now: float) -> None:
        for key, b in list(self.clients.items()):
            b.refill(self.burst, self.every_s, now)
            if b.tokens >= self.burst:
                del self.clients[key]
        while len(self.clients) >= self.max_clients:  # all still spending: the oldest entries go
            del self.clients[next(iter(self.clients))]

    def _wait(self, bucket: Bucket, now: float) -> float:
        if bucket.tokens < 1:
            return (1 - bucket.tokens) * self.every_s
        if self.global_burst is not None and bucket.tokens < self.burst:  # not quiet: the ceiling applies
            self.all.refill(self.global_burst, self.global_every_s, now)
            if self.all.tokens < 1:
                return (1 - self.all.tokens) * self.global_every_s
        return 0.0

    def wait_s(self, client: str) -> float:
        """0 when `client` may act now, else the seconds until it may. Spends nothing."""
        with self.lock:
            now = self.clock()
            return self._wait(self._bucket(client, now), now)

    def spend(self, client: str) -> None:
        """Count one act of `client` (a wrong guess, a new nickname)."""
        with self.lock:
            now = self.clock()
            bucket = self._bucket(client, now)
            bucket.tokens = max(0.0, bucket.tokens - 1)
            if self.global_burst is not None:
                self.all.refill(self.global_burst, self.global_every_s, now)
                self.all.tokens = max(0.0, self.all.tokens - 1)

    def take(self, client: str) -> float:
        """Check and spend at once: 0 (spent one) or the seconds to wait (nothing spent)."""
        with self.lock:
            now = self.clock()
            bucket = self._bucket(client, now)
            wait = self._wait(bucket, now)
            if wait == 0:
                bucket.tokens -= 1
                if self.global_burst is not None:
                    self.all.refill(self.global_burst, self.global_every_s, now)
                    self.all.tokens = max(0.0, self.all.tokens - 1)
            return wait

    def refund(self, client: str) -> None:
        """Give back what `take` spent when the act did not happen (a rejoin, a refused nickname)."""
        with self.lock:
            bucket = self.clients.get(client)
            if bucket is not None:
                bucket.tokens = min(self.burst, bucket.tokens + 1)
            if self.global_burst is not None:
                self.all.tokens = min(self.global_burst, self.all.tokens + 1)


def retry_after(wait_s: float) -> str:
    return str(max(1, round(wait_s + 0.49)))
