"""The FastAPI application: settings, model loading (lifespan), routers, pages, error bodies.

Every error the app produces has the body {"detail": "...", "parameter": ...}: request
validation (422, or 400 for malformed JSON), BadInput from the routers, HTTP errors (404, 405),
413 from the body limit, 503 from admission control, and a generic 500 that never shows a
traceback or a file path.

Middleware, outermost first: security headers (app/security.py), admission control
(app/admission.py), body size limit (app/middleware.py). Swagger UI (/docs, /redoc) is off: it
needs inline script and a CDN, which the strict CSP forbids; the schema is at /openapi.json.
"""
from __future__ import annotations

import ctypes
import logging
import sys
from contextlib import asynccontextmanager

from anyio import to_thread
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from jinja2 import TemplateNotFound
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from . import __version__, openapi
from .admission import AdmissionControl, AdmissionState
from .config import Settings
from .inference import BadInput, Models
from .middleware import BodySizeLimit
from .security import HEADERS, SecurityHeaders
from .routers import attention, generation, mask_fill, meta, nsp

log = logging.getLogger("app")

DESCRIPTION = """Live tiny character-level language models for teaching: a GPT (next character) and a
BERT (masked characters + next-sentence prediction), exported to ONNX and run with onnxruntime.

Every error answers `{"detail": "<what was wrong>", "parameter": "<its name or null>"}`."""


def error(status: int, detail: str, parameter: str | None = None) -> JSONResponse:
    return JSONResponse({"detail": detail, "parameter": parameter}, status_code=status)


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
        return 422, "the request body must be a JSON object (with Content-Type: application/json)", None
    if kind == "value_error":
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        return 422, msg, param
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


HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(request: Request) -> list[str]:
    """The methods some route answers on this path (Starlette's 405 names only the first route's)."""
    routes = request.app.router.routes
    return [m for m in HTTP_METHODS
            if any(route.matches({**request.scope, "method": m})[0] == Match.FULL for route in routes)]


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError):
        return error(*validation_error_body(exc))

    @app.exception_handler(BadInput)
    async def on_bad_input(request: Request, exc: BadInput):
        return error(exc.status, exc.detail, exc.parameter)

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException):
        detail = exc.detail if isinstance(exc.detail, str) else "request failed"
        response = error(exc.status_code, detail, None)
        response.headers.update(exc.headers or {})
        if exc.status_code == 405:  # Allow: every method of every route on this path (GET and POST stream)
            response.headers["Allow"] = ", ".join(allowed_methods(request))
        return response

    @app.exception_handler(TemplateNotFound)
    async def on_missing_template(request: Request, exc: TemplateNotFound):
        log.error("page template missing: %s", exc)
        return error(503, "this page is not installed on the server", None)

    @app.exception_handler(Exception)
    async def on_crash(request: Request, exc: Exception):
        # Logged in full for the operator; the client gets no traceback and no path.
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        response = error(500, "internal server error", None)
        # Starlette sends this from outside the middleware stack: add the security headers here.
        response.headers.update(HEADERS)
        return response


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Cap glibc's malloc arenas. glibc gives threads their own arenas (up to 8 per core), each
    keeping the memory it freed; the model requests run on up to ~70 pool threads, so a busy
    server's memory would grow with thread count, not with load. No-op off glibc."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL("libc.so.6").mallopt(-8, arenas)  # -8 = M_ARENA_MAX
    except (OSError, AttributeError):
        pass


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        limit_malloc_arenas()
        # Load once; the sessions are shared by all threads (InferenceSession.run is thread-safe).
        models = Models.load(settings.models_dir, settings.threads, settings.parallel_runs)
        for problem in models.errors or []:
            log.warning("models folder %s: %s", settings.models_dir, problem)
        app.state.models = models
        limiter = to_thread.current_default_thread_limiter()
        if settings.thread_pool:
            limiter.total_tokens = settings.thread_pool
        elif settings.max_concurrent_requests:
            # Each admitted model request may hold a pool thread; keep threads over for static
            # files (read in the pool) and stream batches, whatever the cap.
            limiter.total_tokens = max(limiter.total_tokens, settings.max_concurrent_requests + 8)
        yield

    app = FastAPI(title="Pretraining Playground", version=__version__, description=DESCRIPTION, lifespan=lifespan,
                  docs_url=None, redoc_url=None)
    app.state.settings = settings
    app.state.models = Models(errors=["not loaded yet"])
    app.state.active_streams = 0  # generation streams in flight (tests check it returns to 0)
    app.state.templates = Jinja2Templates(directory=str(settings.templates_dir))
    app.state.admission = AdmissionState(max_in_flight=settings.max_concurrent_requests)
    install_error_handlers(app)
    openapi.install(app)
    # add_middleware puts each one outside the ones added before it
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(AdmissionControl, state=app.state.admission)
    app.add_middleware(SecurityHeaders)
    # Mounted only when present: without the applets' files /static/... is a plain 404.
    if settings.static_dir.is_dir():
        app.mount("/static", StaticFiles(directory=str(settings.static_dir)), name="static")
    for router in (meta.router, mask_fill.router, generation.router, nsp.router, attention.router):
        app.include_router(router)
    return app


app = create_app()
