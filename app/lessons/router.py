"""The lessons API (/api/lessons, instructor only): list, save, read, change, delete. A lesson's
body is its file (app/lessons/schema.py): what GET gives is what POST and PUT take, so export is
GET (with `?download=true` a file to keep) and import is POST. Every field is checked before
anything is written, and a save is one row in one transaction: a bad file stores nothing."""
from __future__ import annotations

import json
import re
from typing import Annotated

from fastapi import APIRouter, Body, Path, Query, Request, Response

from .. import auth, deps
from ..classes.router import ClassesDep, errs
from ..errors import ApiError
from . import checks, presenter, store
from .schema import Lesson, LessonEntry

router = APIRouter(tags=["lessons"])
Instructor = auth.InstructorDep
LessonId = Annotated[str, Path(max_length=64, description="A saved lesson's number or a shipped lesson's name.")]
BODY, INSTRUCTOR = (400, 413, 422), (401, 403, 429)
# The request body is read and checked here (checks.parse), so a refusal names the whole path of the
# field (stages[3].items[0].positions); the schema is still the documented one.
LESSON_BODY = {"requestBody": {"required": True, "content": {"application/json": {
    "schema": {"$ref": "#/components/schemas/Lesson"}}}}}


async def lesson_body(request: Request) -> dict:
    raw = await request.body()
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise ApiError("the request body is not valid JSON (a lesson file)", None, status=400) from None


# (the preview has a path of its own: under /api/lessons/ it would read as a lesson's id)
ID = (404, 422)  # a lesson id: unknown, or longer than 64 characters


@router.get("/api/lessons", response_model=list[LessonEntry], responses=errs(*INSTRUCTOR))
def listing(_: Instructor, c: ClassesDep):
    """Every lesson this server has (instructor): the shipped ones, then the saved ones, newest first."""
    return store.listing(c.db)


@router.post("/api/lessons", status_code=201, responses=errs(*BODY, *INSTRUCTOR, 409), openapi_extra=LESSON_BODY)
async def add(request: Request, _: Instructor, c: ClassesDep, registry: deps.RegistryDep) -> dict:
    """Save a lesson (instructor): a new one, a copy of another (its file), or an imported file.
    Answers {"id"}."""
    lesson = checks.read(await lesson_body(request), registry)
    return {"id": store.add(c.db, lesson)}


@router.post("/api/lesson-preview", responses=errs(*BODY, *INSTRUCTOR, 404), openapi_extra=LESSON_BODY)
async def preview(request: Request, _: Instructor, registry: deps.RegistryDep,
                  model: Annotated[str | None, Query(max_length=64, description="A model set id (its NSP quiz bank).")] = None
                  ) -> dict:
    """What each stage of a lesson file (not saved yet, or saved) shows the class (instructor): per
    class stage, its items as a phone draws them (never the truth... except `truth` for the teacher's
    preview); per applet stage, the address of the applet with its settings."""
    lesson = checks.parse(await lesson_body(request))
    checks.check_refs(lesson, registry, model)
    return {"stages": presenter.preview(lesson, registry, model)}


@router.get("/api/lessons/{id}", response_model=Lesson, response_model_exclude_none=True, responses=errs(*INSTRUCTOR, *ID))
def read(id: LessonId, _: Instructor, c: ClassesDep,
         download: Annotated[bool, Query(description="true: as a file to keep (Content-Disposition: attachment).")] = False):
    """A lesson's file (instructor)."""
    body, _shipped = store.get(c.db, id)
    if not download:
        return body
    name = re.sub(r"[^a-z0-9]+", "-", body["title"].lower()).strip("-")[:60] or "lesson"
    return Response(json.dumps(body, ensure_ascii=False, indent=2) + "\n", media_type="application/json",
                    headers={"Content-Disposition": f'attachment; filename="{name}.lesson.json"'})


@router.put("/api/lessons/{id}", responses=errs(*BODY, *INSTRUCTOR, *ID, 409), openapi_extra=LESSON_BODY)
async def change(id: LessonId, request: Request, _: Instructor, c: ClassesDep, registry: deps.RegistryDep) -> dict:
    """Replace a saved lesson with a new version of its file (instructor); a shipped one is 409 (copy it)."""
    lesson = checks.read(await lesson_body(request), registry)
    store.replace(c.db, id, lesson)
    return {"id": id}


@router.delete("/api/lessons/{id}", status_code=204, responses=errs(*INSTRUCTOR, *ID, 409))
def delete(id: LessonId, _: Instructor, c: ClassesDep):
    """Delete a saved lesson (instructor). Classes already started from it keep their copy of its stages."""
    store.remove(c.db, id)
    return Response(status_code=204)
