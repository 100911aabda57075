"""Every error the app answers, in one shape: {"detail": "<what was wrong>", "parameter": <name or null>}.

One exception type (ApiError) for the routers and dependencies; the table that turns pydantic's
validation errors into sentences naming the parameter; one helper that builds the JSON body,
used by the exception handlers and by every middleware that answers on its own (admission,
body size, hosts)."""
from __future__ import annotations

import json
import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from jinja2 import TemplateNotFound
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import Send

log = logging.getLogger("app")


class ApiError(Exception):
    """An answer other than success: HTTP status, a sentence, and the parameter it is about."""

    def __init__(self, detail: str, parameter: str | None = None, status: int = 422,
                 headers: dict[str, str] | None = None):
        super().__init__(detail)
        self.detail, self.parameter, self.status, self.headers = detail, parameter, status, headers or {}


def body(detail: str, parameter: str | None = None) -> bytes:
    return json.dumps({"detail": detail, "parameter": parameter}).encode()


def sayable(text: str | None) -> str | None:
    """`text` as UTF-8 can carry it: a lone surrogate (half of a character, which a client's JSON escape
    "\\ud800" makes) quoted back in a sentence is shown as its escape instead of failing the answer."""
    return text if text is None or text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")


def response(status: int, detail: str, parameter: str | None = None, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"detail": sayable(detail), "parameter": sayable(parameter)}, status_code=status,
                        headers=headers)


async def send_error(send: Send, status: int, detail: str, parameter: str | None = None,
                     headers: dict[str, str] | None = None) -> None:
    """Answer from a pure ASGI middleware (before or instead of the app)."""
    data = body(detail, parameter)
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
           (b"cache-control", b"no-store")]
    raw += [(k.lower().encode(), str(v).encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data, "more_body": False})


MAX_NAME = 64  # an unknown field's name quoted back at most this long (a client may send one of megabytes)

# pydantic error type -> sentence; {p} is the parameter, the rest come from the error's ctx.
_MESSAGES = {
    "missing": "{p} is required",
    "string_too_short": "{p} must not be empty",
    "string_too_long": "{p} must be at most {max_length} characters",
    "too_long": "{p} may hold at most {max_length} items",
    "greater_than_equal": "{p} must be at least {ge}",
    "greater_than": "{p} must be greater than {gt}",
    "less_than_equal": "{p} must be at most {le}",
    "less_than": "{p} must be less than {lt}",
    "finite_number": "{p} must be a finite number (not NaN or infinity)",
    "int_parsing": "{p} must be an integer",
    "int_from_float": "{p} must be an integer",
    "int_type": "{p} must be an integer",
    "float_parsing": "{p} must be a number",
    "float_type": "{p} must be a number",
    "string_type": "{p} must be a string",
    "string_pattern_mismatch": "{p} must match {pattern}",
    "bool_type": "{p} must be true or false",
    "list_type": "{p} must be a list",
    "literal_error": "{p} must be one of {expected}",
    "extra_forbidden": "{p} is not a parameter of this endpoint",
    "too_short": "{p} must hold at least {min_length} items",
    "string_unicode": "{p} must be valid Unicode text (it holds a lone surrogate)",
}


def validation_error_body(exc: RequestValidationError) -> tuple[int, str, str | None]:
    """The first error, as (status, sentence naming the parameter, parameter)."""
    errors = exc.errors()
    if not errors:
        return 422, "invalid request", None
    err = errors[0]
    loc = [part for part in err.get("loc", ()) if part not in ("body", "query", "path")]
    param = next((str(part) for part in loc if isinstance(part, str)), None)
    kind = err.get("type", "")
    if kind == "json_invalid":
        return 400, "the request body is not valid JSON", None
    if param is None:
        if kind == "missing":
            return 422, "a JSON request body is required", None
        if kind == "string_unicode":  # a field's name holds half a character (an escaped \ud800)
            return 422, "a field name in the request body is not valid Unicode text (it holds a lone surrogate)", None
        return 422, "the request body must be a JSON object (with Content-Type: application/json)", None
    if kind == "value_error":
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        return 422, msg, param
    if kind == "extra_forbidden" and not (0 < len(param) <= MAX_NAME and param.isprintable()):
        shown = repr(param[:MAX_NAME]) if len(param) <= MAX_NAME else repr(param[:MAX_NAME])[:-1] + "..."
        return 422, f"{shown} is not a parameter of this endpoint", param[:MAX_NAME]
    template = _MESSAGES.get(kind)
    ctx = {k: v for k, v in (err.get("ctx") or {}).items()}
    if kind == "string_too_short" and ctx.get("min_length", 1) > 1:
        template = "{p} must be at least {min_length} characters"
    if template is not None:
        try:
            return 422, template.format(p=param, **ctx), param
        except (KeyError, IndexError):
            pass
    return 422, f"{param}: {err.get('msg', 'invalid value')}", param


UNPARSED = "There was an error parsing the body"
TOO_DEEP = "the request body is JSON nested too deeply to read (send the fields the endpoint documents)"
UNREADABLE = "the request body could not be read as JSON"
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(request: Request) -> list[str]:
    """The methods some route answers on this path (Starlette's 405 names only the first route's)."""
    routes = request.app.router.routes
    return [m for m in HTTP_METHODS
            if any(route.matches({**request.scope, "method": m})[0] == Match.FULL for route in routes)]


def install_handlers(app: FastAPI, security_headers: dict[str, str]) -> None:
    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError):
        return response(*validation_error_body(exc))

    @app.exception_handler(ApiError)
    async def on_api_error(request: Request, exc: ApiError):
        return response(exc.status, exc.detail, exc.parameter, exc.headers)

    @app.exception_handler(RecursionError)
    async def on_too_deep(request: Request, exc: RecursionError):
        # JSON nested thousands deep (a body, or a JSON text inside one): the client's doing, one log line
        log.warning("%s %s: a request body nested too deeply to read", request.method, request.url.path)
        return response(400, TOO_DEEP, None)

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException):
        detail = exc.detail if isinstance(exc.detail, str) else "request failed"
        if exc.status_code == 400 and detail == UNPARSED:  # FastAPI's own words for a body it could not read
            detail = TOO_DEEP if isinstance(exc.__cause__, RecursionError) else UNREADABLE
        resp = response(exc.status_code, detail, None)
        resp.headers.update(exc.headers or {})
        if exc.status_code == 405:  # Allow: every method of every route on this path (GET and POST stream)
            resp.headers["Allow"] = ", ".join(allowed_methods(request))
        return resp

    @app.exception_handler(TemplateNotFound)
    async def on_missing_template(request: Request, exc: TemplateNotFound):
        log.error("page template missing: %s", exc)
        return response(503, "this page is not installed on the server", None)

    @app.exception_handler(Exception)
    async def on_crash(request: Request, exc: Exception):
        # Logged in full for the operator; the client gets no traceback and no path.
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        resp = response(500, "internal server error", None)
        # Starlette sends this from outside the middleware stack: add the security headers here.
        resp.headers.update(security_headers)
        return resp
