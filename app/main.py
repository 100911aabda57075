"""The FastAPI application, assembled: settings, the model registry (lifespan), middleware,
routers, pages and static files. Errors: app/errors.py; models: app/registry.py.

Middleware, outermost first, each a pure ASGI class: security headers (app/security.py), Host
allow-list (app/hosts.py), admission control (app/admission.py), gzip (app/compression.py; never the
event streams), body size and time limits (app/middleware.py). Below them all, `python -m app`
runs uvicorn with the header and write-stall timeouts of app/protocol.py."""
from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager

from anyio import to_thread
from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from . import __version__, auth, errors, glossary, home, openapi, pages
from .classes.addresses import public_hosts
from .classes.router import router as classes_router
from .classes.store import Classes
from .lessons.router import router as lessons_router
from .admission import AdmissionControl, AdmissionState
from .compression import Compression
from .config import Settings
from .hosts import HostAllowList
from .instructor_first import InstructorFirst
from .middleware import BodySizeLimit
from .finetunes.jobs import FinetuneManager
from .jobs import install_stop_hook, rescan
from .registry import Registry
from .routers import (attention, compare, concepts, device, docs, electra, finetune_plan, finetunes, generation, login,
                      mask_fill, meta, nsp, objectives, qr, runs, spans)
from .runs import RunManager
from .runtime import Runtime, limit_malloc_arenas
from .security import HEADERS, SecurityHeaders

DESCRIPTION = """Live tiny character-level language models for teaching: a GPT (next character) and a
BERT (masked characters + next-sentence prediction), exported to ONNX and run with onnxruntime.
Every inference endpoint takes an optional `model` (a model set id from `/api/models`).

Every error answers `{"detail": "<what was wrong>", "parameter": "<its name or null>"}`."""


def load_registry(settings: Settings) -> Registry:
    registry = Registry(Runtime(settings.threads, settings.parallel_runs), settings.max_loaded_sets)
    registry.add(settings.models_dir, kind="shipped", pin=True, default=True)
    for folder in settings.extra_models:
        registry.get(registry.add(folder, kind="extra"))  # checked now: /api/health reports it from the start
    return registry


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        limit_malloc_arenas()
        if not settings.instructor_token:  # served without `python -m app` (which makes one for all workers)
            settings.instructor_token = auth.new_token()
            logging.getLogger("app").warning("instructor login: /login#token=%s", settings.instructor_token)
        app.state.registry = load_registry(settings)
        device.pack_engine_soon(settings.static_dir)  # the engine's gzip copy, made once at low priority
        app.state.runs = RunManager(settings, app.state.registry)
        app.state.finetunes = FinetuneManager(settings, app.state.registry, app.state.runs)
        app.state.runs.slot_users.append(app.state.finetunes.active_label)  # one training slot for both
        try:
            app.state.classes = await to_thread.run_sync(Classes.open, settings)
        except Exception as e:  # noqa: BLE001 - a data folder that cannot hold the database: the rest still serves
            app.state.classes = None
            logging.getLogger("app").warning("class sessions are off: their database could not be opened: %s", e)
        await to_thread.run_sync(app.state.runs.startup)
        await to_thread.run_sync(app.state.finetunes.startup)
        install_stop_hook(app.state.runs, app.state.finetunes)  # SIGINT/SIGTERM end the streams and trainers at once
        scans = [asyncio.create_task(rescan(m)) for m in (app.state.runs, app.state.finetunes)]  # other workers' sets
        limiter = to_thread.current_default_thread_limiter()
        if settings.thread_pool:
            limiter.total_tokens = settings.thread_pool
        elif settings.max_concurrent_requests:
            # Each admitted model request may hold a pool thread; keep threads over for static
            # files (read in the pool) and stream batches, whatever the cap.
            limiter.total_tokens = max(limiter.total_tokens, settings.max_concurrent_requests + 8)
        yield
        for scan in scans:
            scan.cancel()
        await to_thread.run_sync(app.state.runs.kill_all)
        app.state.finetunes.kill_all()
        if app.state.classes is not None:
            app.state.classes.close()

    app = FastAPI(title="Pretraining Playground", version=__version__, description=DESCRIPTION, lifespan=lifespan,
                  docs_url=None, redoc_url=None)
    app.state.settings = settings
    app.state.registry = None
    app.state.active_streams = 0  # generation streams in flight (tests check it returns to 0)
    app.state.templates = Jinja2Templates(directory=str(settings.templates_dir))
    glossary.install(app.state.templates.env)
    app.state.templates.env.globals["nav_pages"] = pages.NAV  # the navigation (templates/base.html)
    app.state.templates.env.globals["teacher_pages"] = pages.TEACHER_NAV  # and the instructor's own entries
    app.state.templates.env.globals["home"] = home.facts  # the home page's words, from what exists
    app.state.admission = AdmissionState(max_in_flight=settings.max_concurrent_requests,
                                          generation_share=settings.generation_share)
    errors.install_handlers(app, HEADERS)
    openapi.install(app)
    # add_middleware puts each one outside the ones added before it
    app.add_middleware(InstructorFirst)  # an instructor-only route's request is checked before its body is read
    # A training text may be larger than an inference body (JSON escaping: up to 2x + room)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes, timeout_s=settings.body_timeout_s or None,
                       paths={p: 2 * settings.max_corpus_bytes + 64 * 1024
                              for p in ("/api/runs", "/api/finetunes", "/api/finetune-plan")})
    if settings.gzip_min_bytes:  # text/event-stream is in Starlette's excluded types: streams stay unbuffered
        app.add_middleware(Compression, minimum_size=settings.gzip_min_bytes, compresslevel=5)
    app.add_middleware(AdmissionControl, state=app.state.admission)
    app.add_middleware(HostAllowList, allowed=[*settings.allowed_hosts, *public_hosts(settings)])
    app.add_middleware(SecurityHeaders)
    if settings.static_dir.is_dir():  # without the applets' files /static/... is a plain 404
        app.mount("/static", StaticFiles(directory=str(settings.static_dir)), name="static")
    # A request is matched against each route in turn (FastAPI 0.165: several dict operations per
    # route of an included router): the class's most frequent requests come first, mask-fill's and
    # generation's (~100k instructions a request less than behind meta's five routes and each other).
    for router in (mask_fill.router, generation.router, nsp.router, meta.router, attention.router,
                   compare.router, objectives.router, electra.router, concepts.router, runs.router, login.router,
                   finetunes.router, finetune_plan.router, spans.router, classes_router, lessons_router, docs.router, device.router,
                   qr.router, pages.router):
        app.include_router(router)
    return app


app = create_app()
