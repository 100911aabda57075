"""Security headers on every response, as a pure ASGI middleware.

- Content-Security-Policy (strict, no inline script or style, nothing from other hosts) on every
  response: the pages need nothing else, and on JSON it costs nothing.
- X-Content-Type-Options: nosniff, so no response is ever sniffed into HTML or script.
- Referrer-Policy: no-referrer (shared lesson links can carry the students' text in the query).
- Cross-Origin-Resource-Policy / Cross-Origin-Opener-Policy: same-origin. The opener policy only where
  the browser honours it (https, or a localhost address): on a plain-http LAN address (a teacher's
  laptop, http://192.168.1.20:8000) Chromium ignores it and logs an error on every page.

No CORS headers are sent: the applets are served from the same origin as the API, so other sites'
scripts must not read the API's answers.
"""
from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = "; ".join([
    "default-src 'self'",
    # 'wasm-unsafe-eval': the browser engine (static/lib/engine.js) compiles onnxruntime's WebAssembly;
    # it allows WebAssembly compilation only, never eval() of JavaScript ('unsafe-eval' stays out)
    "script-src 'self' 'wasm-unsafe-eval'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'self'",
    "form-action 'self'",
])

HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cross-origin-resource-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
}


class SecurityHeaders:
    def __init__(self, app: ASGIApp, headers: dict[str, str] | None = None):
        self.app = app
        self.headers = dict(HEADERS if headers is None else headers)
        # encoded once: per response only a scan of the app's own (few) header names
        self._raw = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in self.headers.items()]
        self._names = frozenset(name for name, _ in self._raw)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw, names = self._raw, self._names
        if not trustworthy(scope):
            raw = [h for h in raw if h[0] != b"cross-origin-opener-policy"]

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                # ours win over anything set further in
                message["headers"] = [h for h in message.get("headers", ()) if h[0].lower() not in names] + raw
            await send(message)

        await self.app(scope, receive, send_with_headers)


LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")


def trustworthy(scope: Scope) -> bool:
    """Whether the browser treats this request's origin as potentially trustworthy (a secure
    context): https, or a localhost host (including *.localhost and all of 127.0.0.0/8)."""
    if scope.get("scheme") in ("https", "wss"):
        return True
    host = ""
    for name, value in scope.get("headers", ()):
        if name == b"host":
            host = value.decode("latin-1").strip().lower()
            break
    if host.startswith("["):
        host = host[:host.find("]") + 1] if "]" in host else host
    else:
        host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return host in LOCAL_HOSTS or host.endswith(".localhost") or host.startswith("127.")
