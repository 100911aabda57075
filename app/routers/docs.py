"""/docs: the interactive API reference (Swagger UI), served offline.

FastAPI's own /docs page loads Swagger UI from a CDN with an inline script, which a school network
without internet cannot fetch and the strict CSP (app/security.py) forbids. Here the page is a
template that loads the vendored copy (static/vendor/swagger-ui, with its license) and a small
initializer file (static/pages/docs.js): every byte comes from this server."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

router = APIRouter(include_in_schema=False)


@router.api_route("/docs", methods=["GET", "HEAD"], response_class=HTMLResponse)
def docs_page(request: Request):
    templates = request.app.state.templates
    return templates.TemplateResponse(request, "docs.html", {"openapi_url": request.app.openapi_url})
