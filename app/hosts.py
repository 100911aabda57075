"""Host header allow-list, as a pure ASGI middleware.

Without it any Host is served and reflected (a redirect's Location would point at whatever name
the request carried), and a DNS-rebinding page can read the API: a page from evil.example makes
its name resolve to 127.0.0.1 (or the teacher's LAN address), and the browser then treats our
answers as same-origin with it. The browser still sends `Host: evil.example`; refusing names we
do not know closes that door.

Allowed by default: localhost (and *.localhost), this machine's host name (and name.local), any
address of this machine's own, the address the connection arrived on, and the names given with
--allowed-hosts (e.g. the LAN name a class uses). "*" allows every Host (behind a proxy that
checks it). Anything else gets 400: in the usual JSON shape for API clients, and as a short page
in plain words for a browser asking for a page (Accept: text/html), e.g. a student who typed a LAN
name the server was not told about. Neither repeats the name back.
"""
from __future__ import annotations

import ipaddress
import re
import socket
from functools import lru_cache
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

from .errors import send_error


PORT = re.compile(r"[0-9]{1,5}")  # ASCII digits only: str.isdigit() would take "٨٠" or "²"


def split_host(value: str) -> str:
    """The name or address of a Host header value, without port and brackets, lower case; "" (no
    name, never allowed) when what follows the ":" is not a port. Reading only what comes before the
    ":" let `127.0.0.1:evil` through: a value no browser sends, so it is refused, not guessed at."""
    value = value.strip().lower()
    if value.startswith("["):  # [v6] or [v6]:port
        inside, _, rest = value[1:].partition("]")
        return inside if rest == "" or (rest[:1] == ":" and PORT.fullmatch(rest[1:])) else ""
    if value.count(":") == 1:
        value, port = value.split(":", 1)
        if not PORT.fullmatch(port):
            return ""
    return value.rstrip(".")


def _proc_addresses() -> set[str]:
    """Every IPv4 and IPv6 address of this machine's interfaces (Linux /proc; empty elsewhere)."""
    found: set[str] = set()
    try:
        lines = Path("/proc/net/fib_trie").read_text().splitlines()
        for prev, line in zip(lines, lines[1:]):
            if "/32 host LOCAL" in line:
                found.add(prev.split()[-1])
    except OSError:
        pass
    try:
        for line in Path("/proc/net/if_inet6").read_text().splitlines():
            raw = line.split()[0]
            found.add(str(ipaddress.IPv6Address(int(raw, 16))))
    except (OSError, ValueError, IndexError):
        pass
    return found


@lru_cache(maxsize=1)
def machine_names() -> frozenset[str]:
    """localhost names, this machine's host name(s) and its own addresses (read once)."""
    names = {"localhost", "127.0.0.1", "::1"}
    hostname = socket.gethostname().lower()
    if hostname:
        names |= {hostname, hostname.split(".")[0], hostname.split(".")[0] + ".local"}
        try:
            names |= {info[4][0].split("%")[0] for info in socket.getaddrinfo(hostname, None)}
        except OSError:
            pass
    try:
        names.add(socket.getfqdn().lower())
    except OSError:
        pass
    names |= _proc_addresses()
    return frozenset(n for n in names if n)


UNKNOWN_NAME_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Wrong address · Pretraining Playground</title></head>
<body><main>
<h1>This address does not open the Playground</h1>
<p>The server is running, but it does not answer to the name in your address bar. Ask your teacher for the
address to use (often a number such as <code>http://192.168.1.20:8000</code>), or scan the class QR code again.</p>
<h2>For the teacher</h2>
<p>Give students the address that <code>python -m app</code> printed for them, or restart the server with
<code>--allowed-hosts</code> followed by the name they typed (docs/serving.md: "In a classroom on a LAN").</p>
</main></body></html>
""".encode()


def wants_page(scope: Scope) -> bool:
    """A browser asking for a page (not an API path, Accept names text/html)."""
    if scope["type"] != "http" or scope.get("path", "").startswith("/api/"):
        return False
    accept = next((v for k, v in scope.get("headers", ()) if k == b"accept"), b"")
    return b"text/html" in accept.lower()


async def send_page(send: Send, status: int, page: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(page)).encode()),
        (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": page, "more_body": False})


class HostAllowList:
    def __init__(self, app: ASGIApp, allowed: list[str] | None = None):
        self.app = app
        extra = [split_host(h) for h in (allowed or []) if h.strip()]
        self.any = "*" in extra
        self.allowed = machine_names() | frozenset(extra)
        # Host header values already found allowed by name (the few a class uses), so that a request
        # costs one set lookup; bounded, so that made-up *.localhost names cannot grow it.
        self._known: set[bytes] = set()

    def allows(self, host: str, server_addr: str | None = None) -> bool:
        if self.any:
            return True
        if host in self.allowed or host.endswith(".localhost"):
            return True
        # the very address this connection reached (a LAN address the /proc scan did not list)
        return server_addr is not None and host == split_host(server_addr)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        raw = b""
        for name, value in scope.get("headers", ()):
            if name == b"host":
                raw = value
                break
        if raw in self._known:
            await self.app(scope, receive, send)
            return
        host = split_host(raw.decode("latin-1"))
        if self.allows(host) and len(self._known) < 256:
            self._known.add(raw)
        server = scope.get("server")
        if not self.allows(host, server[0] if server else None):
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            # the name is not repeated back: nothing a client sends is reflected
            if wants_page(scope):
                await send_page(send, 400, UNKNOWN_NAME_PAGE)
                return
            await send_error(send, 400, "this server does not answer to the host name in the Host header; "
                             "its operator can allow the name with --allowed-hosts", "Host")
            return
        await self.app(scope, receive, send)
