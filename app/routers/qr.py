"""GET /api/qr.svg?text=...: a QR code of `text` as an SVG image, drawn by segno (a maintained QR
library that follows the standard, ISO/IEC 18004). Error correction level M (about 15 % of the
code may be damaged or covered), the smallest version that holds the text, never a Micro QR (most
phone cameras do not read those), a white quiet zone of 4 modules. The share panel and the class
page show it as an <img> (static/lib/qr.js).

Drawing a large code costs ~150 ms of CPU, so each text is drawn once (CACHED codes kept, the
least recently used dropped), and drawing a text not in the cache is budgeted per client address
(DRAW_BURST at once, then one per DRAW_EVERY_S; 429 naming `text` with Retry-After): a script
asking for ever new texts cannot take the CPU the class's answers need, while the join page's
code, asked again by every screen, costs nothing after the first time."""
from __future__ import annotations

import io
import threading
from collections import OrderedDict
from typing import Annotated

import segno
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from .. import deps
from ..errors import ApiError
from ..limits import PerClient, client_address, retry_after

router = APIRouter(tags=["lesson"])
# Version 20 at level M holds 666 bytes; a larger code is too dense to scan from across a classroom.
MAX_BYTES = 666
TEXT_DOC = f"what the code holds (a link), at most {MAX_BYTES} bytes of UTF-8"
CACHED = 256  # texts whose drawing is kept
DRAW_BURST, DRAW_EVERY_S = 20, 2.0  # drawings of new texts per client address: at once, then one per this
DRAW_GLOBAL_BURST, DRAW_GLOBAL_EVERY_S = 60, 0.5
_cache: OrderedDict[str, bytes] = OrderedDict()
_lock = threading.Lock()


def qr_svg(text: str) -> bytes:
    """The SVG document of `text`'s QR code: one path, one unit per module, black on white."""
    code = segno.make_qr(text, error="m", boost_error=False)
    out = io.BytesIO()
    code.save(out, kind="svg", scale=1, border=4, dark="#000", light="#fff", xmldecl=False, svgclass="qr",
              lineclass=None, title="QR code")
    return out.getvalue()


def drawn(text: str) -> bytes | None:
    with _lock:
        body = _cache.get(text)
        if body is not None:
            _cache.move_to_end(text)
        return body


def keep(text: str, body: bytes) -> None:
    with _lock:
        _cache[text] = body
        while len(_cache) > CACHED:
            _cache.popitem(last=False)


def draws(request: Request) -> PerClient:
    state = request.app.state
    if getattr(state, "qr_draws", None) is None:
        state.qr_draws = PerClient(DRAW_BURST, DRAW_EVERY_S, DRAW_GLOBAL_BURST, DRAW_GLOBAL_EVERY_S)
    return state.qr_draws


@router.get("/api/qr.svg", response_class=Response, responses={200: {"content": {"image/svg+xml": {}}},
                                                              **deps.errors(422, 429)})
def qr(request: Request,
       text: Annotated[str, Query(min_length=1, max_length=MAX_BYTES, description=TEXT_DOC)]) -> Response:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        raise ApiError(f"text is {size} bytes of UTF-8; a QR code here holds at most {MAX_BYTES}", "text")
    body = drawn(text)
    if body is None:
        wait = draws(request).take(client_address(request))
        if wait > 0:
            retry = retry_after(wait)
            raise ApiError(f"too many different QR codes were asked for from this address lately; try again in "
                           f"{retry} s", "text", status=429, headers={"Retry-After": retry})
        try:
            body = qr_svg(text)
        except UnicodeEncodeError:
            raise ApiError("text must be valid Unicode (no lone surrogates)", "text") from None
        keep(text, body)
    # The same text always gives the same image.
    return Response(body, media_type="image/svg+xml", headers={"Cache-Control": "public, max-age=86400"})
