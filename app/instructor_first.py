"""The instructor before the body: a request to a route only the instructor may use (its endpoint
depends on auth.require_instructor) is checked from its headers before its body is read. FastAPI
reads and parses a JSON body before it resolves any dependency, so without this a stranger's 4 MB
training text to POST /api/runs or /api/finetunes cost its JSON parse (34 ms of CPU) before the 401,
and a loop of them slowed the class's answers.

A pure ASGI middleware: the check is the route's own (require_instructor: the same answers, the
same budget of wrong tokens, spent once: a refused request never reaches the route, an accepted one
is checked again there for free). Which routes: found once per route from the app's own table, so
a new instructor route is covered without a list to keep."""
from __future__ import annotations

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from starlette.requests import Request
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send

from .auth import require_instructor
from .errors import ApiError, send_error

BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def needs_instructor(dependant: Dependant) -> bool:
    return any(d.call is require_instructor or needs_instructor(d) for d in dependant.dependencies)


def leaves(routes):
    """The app's own routes, through included routers (FastAPI keeps an included router whole)."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from leaves(inner.routes)
        else:
            yield route


class InstructorFirst:
    def __init__(self, app: ASGIApp):
        self.app = app
        self.known: dict[tuple[str, str], bool] = {}  # (method, path) -> does its route need the instructor

    def guarded(self, scope: Scope) -> bool:
        key = (scope["method"], scope["path"])
        if key not in self.known:
            app: FastAPI | None = scope.get("app")
            route = next((r for r in leaves(app.router.routes) if r.matches(scope)[0] == Match.FULL), None) if app else None
            dependant = getattr(route, "dependant", None)
            if len(self.known) > 4096:  # paths with a code or an id in them: kept bounded
                self.known.clear()
            self.known[key] = dependant is not None and needs_instructor(dependant)
        return self.known[key]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in BODY_METHODS and self.guarded(scope):
            try:
                await require_instructor(Request(scope))  # headers and cookies only: the body is not read
            except ApiError as e:
                await send_error(send, e.status, e.detail, e.parameter, e.headers)
                return
        await self.app(scope, receive, send)
