"""Health, model cards and the home page."""
from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from .. import deps
from ..inference import SPECIALS, BadInput, Models
from ..schemas import HealthResponse, ModelsResponse, VocabInfo

router = APIRouter(tags=["meta"])


@router.get("/api/health", response_model=HealthResponse)
async def health(models: Models = Depends(deps.models)):
    loaded = {"gpt": models.gpt is not None, "bert": models.bert is not None}
    return {"status": "ok" if all(loaded.values()) else "degraded", "models": loaded}


@router.get("/api/models", response_model=ModelsResponse, responses=deps.errors(503))
async def model_info(models: Models = Depends(deps.models)):
    if models.vocab is None:
        raise BadInput("the vocabulary is not loaded on this server (see /api/health)", None, status=503)
    return {"vocab": VocabInfo(specials=SPECIALS, chars=models.vocab.chars), "cards": models.cards or {}}


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def home(request: Request):
    return deps.render(request, "home.html", "home", "Pretraining Playground")
