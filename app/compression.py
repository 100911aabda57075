"""gzip for answers of at least `minimum_size` bytes, as a pure ASGI middleware.

What Starlette's GZipMiddleware does, for the same responses (measured with callgrind, its header
handling alone cost ~50-110k instructions a request, gzip or not: Headers objects built from the
scope and the answer, a responder object, MutableHeaders edits that rescan the list):

- compressed only when the request's Accept-Encoding names gzip, and only answers of at least
  `minimum_size` bytes; never a 206, an answer that already has a Content-Encoding, nor the
  excluded content types (Starlette's list: text/event-stream, images, audio, video, archives), so
  the event streams stay unbuffered;
- an answer sent whole gets Content-Encoding and its new Content-Length; a streamed one (a static
  file in chunks) is compressed chunk by chunk (each flushed) and loses its Content-Length;
- every answer that could have been compressed says `Vary: Accept-Encoding`, compressed or not;
- chunks of 128 KiB and more are compressed in a worker thread, not on the event loop.

An answer sent whole and under 64 KiB (the JSON of a model request) is compressed at level 1:
for JSON of a few KB it is ~3 % larger than at level 5 and costs less (5 KB of next-token's JSON:
~0.57M instructions instead of ~0.79M, about half of all FastAPI's own work for a request).
"""
from __future__ import annotations

import zlib

import anyio.to_thread
from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES
from starlette.types import ASGIApp, Message, Receive, Scope, Send

FAST_LEVEL_BELOW = 64 * 1024
FAST_LEVEL = 1
THREAD_MINIMUM = 128 * 1024
GZIP_WBITS = 16 + zlib.MAX_WBITS


def add_vary(headers: list) -> list:
    """headers with Accept-Encoding added to Vary (a new list)."""
    out, found = [], False
    for name, value in headers:
        if name.lower() == b"vary":
            value, found = value + b", Accept-Encoding", True
        out.append((name, value))
    if not found:
        out.append((b"vary", b"Accept-Encoding"))
    return out


class Compression:
    def __init__(self, app: ASGIApp, minimum_size: int = 500, compresslevel: int = 9,
                 exclude_content_types: tuple[str, ...] = DEFAULT_EXCLUDED_CONTENT_TYPES):
        self.app, self.minimum_size, self.compresslevel = app, minimum_size, compresslevel
        self.excluded = frozenset(t.partition(";")[0].strip().lower() for t in exclude_content_types)
        self._excluded_cache: dict[bytes, bool] = {}  # Content-Type value -> excluded (the app's few)

    def is_excluded(self, content_type: bytes) -> bool:
        found = self._excluded_cache.get(content_type)
        if found is None:
            media = content_type.decode("latin-1").partition(";")[0].strip().lower()
            kinds = {media, media.partition("/")[0] + "/*"}
            if media.startswith("application/grpc+"):
                kinds.add("application/grpc")
            found = not kinds.isdisjoint(self.excluded)
            if len(self._excluded_cache) < 64:
                self._excluded_cache[content_type] = found
        return found

    def passes_through(self, start: Message) -> bool:
        """An answer left as it is: partial, already encoded, or of an excluded type."""
        if start["status"] == 206:
            return True
        for name, value in start.get("headers", ()):
            name = name.lower()
            if name == b"content-encoding" or (name == b"content-type" and self.is_excluded(value)):
                return True
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        gzip = False
        for name, value in scope["headers"]:
            if name == b"accept-encoding":  # the first one, as Starlette reads it
                gzip = b"gzip" in value
                break
        start: Message | None = None  # the response start, held until the first body decides
        mode = ""  # "" undecided, "as is", "stream" (compressing chunk by chunk)
        compressor = None

        async def compressing_send(message: Message) -> None:
            nonlocal start, mode, compressor
            kind = message["type"]
            if kind == "http.response.start":
                if self.passes_through(message):
                    mode = "as is"
                    await send(message)
                else:
                    start = message
                return
            if mode == "as is" or start is None:
                await send(message)
                return
            if kind == "http.response.body" and mode == "stream":
                message["body"] = await self.compress(compressor, message.get("body", b""),
                                                      message.get("more_body", False))
                await send(message)
                return
            if kind != "http.response.body":  # pathsend: never compressed; early hints, trailers
                if kind == "http.response.pathsend":
                    mode = "as is"
                    await send(start)
                await send(message)
                return
            body, more = message.get("body", b""), message.get("more_body", False)
            if not more and len(body) < self.minimum_size:
                mode = "as is"
                await send(start)
                await send(message)
                return
            headers = add_vary(start.get("headers", ()))
            if not gzip:
                mode = "as is"
            elif not more:
                level = FAST_LEVEL if len(body) < FAST_LEVEL_BELOW else self.compresslevel
                body = await self.compress(zlib.compressobj(level, zlib.DEFLATED, GZIP_WBITS), body, False)
                keep_length = not start.get("trailers", False)
                headers = [h for h in headers if h[0].lower() != b"content-length"] + [(b"content-encoding", b"gzip")]
                if keep_length:
                    headers.append((b"content-length", str(len(body)).encode()))
                message["body"] = body
                mode = "as is"
            else:
                mode = "stream"
                compressor = zlib.compressobj(self.compresslevel, zlib.DEFLATED, GZIP_WBITS)
                headers = [h for h in headers if h[0].lower() != b"content-length"] + [(b"content-encoding", b"gzip")]
                message["body"] = await self.compress(compressor, body, True)
            start["headers"] = headers
            await send(start)
            await send(message)

        await self.app(scope, receive, compressing_send)

    @staticmethod
    async def compress(compressor, body: bytes, more: bool) -> bytes:
        def run() -> bytes:
            return compressor.compress(body) + compressor.flush(zlib.Z_SYNC_FLUSH if more else zlib.Z_FINISH)

        if len(body) >= THREAD_MINIMUM:  # large chunks would hold the event loop
            return await anyio.to_thread.run_sync(run)
        return run()
