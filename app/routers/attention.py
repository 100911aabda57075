"""The attention applet's page (causal vs bidirectional masks; it reads /api/models)."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from .. import deps

router = APIRouter(tags=["attention"])


@router.api_route("/attention", methods=["GET", "HEAD"], response_class=HTMLResponse, include_in_schema=False)
def attention_page(request: Request):
    return deps.render(request, "attention.html", "attention", "Attention")
