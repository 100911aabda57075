"""Health, the model sets and their cards, and the home page."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from .. import deps
from ..contract import SPECIALS, SPECS
from ..config import REPO
from ..errors import ApiError
from ..jobs.store import scrub
from ..schemas import FamiliesResponse, HealthResponse, Limits, ModelSetDetail, ModelsResponse

router = APIRouter(tags=["meta"])


@router.head("/api/health", include_in_schema=False)
@router.get("/api/health", response_model=HealthResponse,
            responses={503: {"model": HealthResponse, "description": "The default model set failed a check"}})
def health(request: Request, registry: deps.RegistryDep):
    """The status code follows the default model set only: 200 while it passed every check, 503
    (same body) when it did not, so load balancers and `curl -f` drop a server only when what
    every page uses is broken. Other sets (a student's broken run, an extra folder) and storage
    (a full or read-only data folder) are reported in the body: `status` 'degraded', `sets` says
    which set and why, `storage` what stops runs from being stored."""
    default = registry.default
    report = registry.health()
    runs = getattr(request.app.state, "runs", None)
    storage = runs.storage_problem() if runs is not None else None
    default_ok = report["sets"].get(default.id, {}).get("status") == "ok"
    body = {"status": "ok" if report["ok"] and not storage else "degraded", "storage": storage,
            "models": {f: getattr(default, f) is not None for f in SPECS if not SPECS[f].optional}, "sets": report["sets"]}
    return JSONResponse(HealthResponse.model_validate(body).model_dump(), status_code=200 if default_ok else 503,
                        headers={"Cache-Control": "no-store"})


def no_paths(value, settings):
    """A card may name the folders it was made from (a classifier's base_model.folder): no server
    paths leave the server (the data folder as "data", the checkout's relative, any other cut to its name)."""
    return scrub(value, [(str(settings.data_dir), "data"), (str(REPO) + "/", ""), (str(REPO), ".")])


@router.get("/api/families", response_model=FamiliesResponse)
def families():
    """The model families this server knows (app/contract/families.py): the pages build their family
    pickers, charts and views from this list and load each family's own script."""
    return deps.respond(FamiliesResponse, {"families": public_specs()})


def public_specs() -> list[dict]:
    return [s.public() for s in SPECS.values()]


@router.get("/api/models", response_model=ModelsResponse, responses=deps.errors(503))
def model_list(registry: deps.RegistryDep, settings: deps.SettingsDep):
    """Every model set (the shipped one, extra folders, finished training runs and their
    snapshots) with its cards, the default set's vocabulary, and the limits the server enforces."""
    default = registry.default
    if default.vocab is None:
        raise ApiError("the vocabulary is not loaded on this server (see /api/health)", None, status=503)
    # every card once (the default set's at the top level), and the listed ones without loss curves
    sets = [{**s, "cards": {} if s["id"] == default.id else
             {f: {k: v for k, v in card.items() if k != "curves"} for f, card in s["cards"].items()}}
            for s in no_paths(registry.list(), settings)]
    return deps.respond(ModelsResponse, {
        "default": default.id, "sets": sets, "limits": Limits(),
        "vocab": {"specials": SPECIALS, "chars": default.vocab.chars}, "cards": no_paths(default.cards, settings),
        "examples": default.meta.examples, "models_on_phones": settings.models_on_phones,
        "families": public_specs()})


@router.get("/api/models/{model}", response_model=ModelSetDetail, responses=deps.errors(404))
def model_detail(model: str, registry: deps.RegistryDep, settings: deps.SettingsDep):
    """One model set, loaded, with its vocabulary and (a training run's set) lines of its own
    held-out text, the applets' defaults."""
    s = registry.get(model)
    info = registry.info(s.meta, s)
    vocab = {"specials": SPECIALS, "chars": s.vocab.chars} if s.vocab else None
    cards = no_paths(s.cards, settings)
    return deps.respond(ModelSetDetail, {**info, "cards": cards, "vocab": vocab, "examples": s.meta.examples})
