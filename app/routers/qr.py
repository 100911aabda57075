"""GET /api/qr.svg?text=...: a QR code of `text` as an SVG image, drawn by segno (a maintained QR
library that follows the standard, ISO/IEC 18004). Error correction level M (about 15 % of the
code may be damaged or covered), the smallest version that holds the text, never a Micro QR (most
phone cameras do not read those), a white quiet zone of 4 modules. The share panel and the class
page show it as an <img> (static/lib/qr.js)."""
from __future__ import annotations

import io
from typing import Annotated

import segno
from fastapi import APIRouter, Query
from fastapi.responses import Response

from .. import deps
from ..errors import ApiError

router = APIRouter(tags=["lesson"])
# Version 20 at level M holds 666 bytes; a larger code is too dense to scan from across a classroom.
MAX_BYTES = 666
TEXT_DOC = f"what the code holds (a link), at most {MAX_BYTES} bytes of UTF-8"


def qr_svg(text: str) -> bytes:
    """The SVG document of `text`'s QR code: one path, one unit per module, black on white."""
    code = segno.make_qr(text, error="m", boost_error=False)
    out = io.BytesIO()
    code.save(out, kind="svg", scale=1, border=4, dark="#000", light="#fff", xmldecl=False, svgclass="qr",
              lineclass=None, title="QR code")
    return out.getvalue()


@router.get("/api/qr.svg", response_class=Response, responses={200: {"content": {"image/svg+xml": {}}},
                                                              **deps.errors(422)})
def qr(text: Annotated[str, Query(min_length=1, max_length=MAX_BYTES, description=TEXT_DOC)]) -> Response:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        raise ApiError(f"text is {size} bytes of UTF-8; a QR code here holds at most {MAX_BYTES}", "text")
    try:
        body = qr_svg(text)
    except UnicodeEncodeError:
        raise ApiError("text must be valid Unicode (no lone surrogates)", "text") from None
    # The same text always gives the same image.
    return Response(body, media_type="image/svg+xml", headers={"Cache-Control": "public, max-age=86400"})
