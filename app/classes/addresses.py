"""The address students can actually reach, for the join page's QR code and for `python -m app`.

- `--public-url` (behind a reverse proxy or a name): that, always.
- Listening on all interfaces (0.0.0.0 or ::): this machine's LAN addresses (never loopback).
- Listening on one address: that address, unless it is loopback.
- Loopback only (the default 127.0.0.1): nobody else can reach it; the class page says so and
  gives the flag that fixes it (STUDENTS_FLAG)."""
from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from ..config import Settings
from ..hosts import _proc_addresses

STUDENTS_FLAG = "--host 0.0.0.0"
JOIN_PATH = "/join"


def _usable(addr: str) -> bool:
    try:
        ip = ipaddress.ip_address(addr.split("%")[0])
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_unspecified)


def public_hosts(settings: Settings) -> list[str]:
    """The host name of --public-url, which the Host allow-list must accept (app/hosts.py)."""
    if not settings.public_url:
        return []
    return [urlsplit(settings.public_url).hostname or ""]


def lan_addresses() -> list[str]:
    """This machine's addresses others can reach: private IPv4 first, then other IPv4, then IPv6."""
    found = [a for a in _proc_addresses() if _usable(a)]
    return sorted(found, key=lambda a: (":" in a, not ipaddress.ip_address(a).is_private, a))


def _url(host: str, port: int) -> str:
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}" + ("" if port == 80 else f":{port}")


def base_urls(settings: Settings) -> list[str]:
    """Every base address students can use, the best first; [] when the server is loopback-only."""
    public = (getattr(settings, "public_url", None) or "").rstrip("/")
    if public:
        return [public]
    host = settings.host.strip("[]")
    if host in ("0.0.0.0", "::", ""):
        return [_url(a, settings.port) for a in lan_addresses()]
    if host == "localhost" or not _usable(host) and _is_ip(host):
        return []
    return [_url(host, settings.port)]


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def student_url(settings: Settings, code: str | None = None, key: str | None = None) -> str | None:
    """The join page at the best reachable address (with the code, and the session's join key when
    given: app/classes/joinkey.py; URL-safe already), or None."""
    urls = base_urls(settings)
    if not urls:
        return None
    return urls[0] + JOIN_PATH + (f"?code={code}" if code else "") + (f"&key={key}" if code and key else "")


def students_line(settings: Settings) -> str:
    """What `python -m app` prints for the class: every address students can open, or the fix."""
    urls = base_urls(settings)
    if not urls:
        return (f"Students cannot reach this server: it listens on {settings.host} only. "
                f"For a class, restart with {STUDENTS_FLAG}")
    return "Students open (or scan the QR code on /class):\n" + "\n".join(f"    {u}{JOIN_PATH}" for u in urls)
