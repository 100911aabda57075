"""The class-session API (/api/sessions/...) and its two pages: /class (the instructor's dashboard
and, with ?view=projector, the projector) and /join (students).

Who may do what: the instructor (app/auth.py's dependency) creates, paces, removes nicknames,
ends, exports and deletes; a student is whoever holds the session's participant cookie (set by
join: HttpOnly, SameSite=Strict, only a hash of it is stored). State and results are readable
with the code, but nicknames only by the instructor (or everyone once the leaderboard is on),
and results of items the teacher has not revealed only by the instructor."""
from __future__ import annotations

import asyncio
import json
from typing import Annotated, AsyncIterable, Literal

from anyio import to_thread
from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.sse import EventSourceResponse, ServerSentEvent

from .. import auth, deps
from ..errors import ApiError
from ..limits import client_address
from ..schemas import ErrorBody
from . import door, guard, joinkey, projector, rejoin, report, room, service, views
from ..lessons import checks as lesson_checks, store as lesson_store
from .addresses import STUDENTS_FLAG, base_urls, student_url
from .codes import cookie_name, display_code, normalize_code
from ..schemas.classes import (AnswerRequest, CreateSession, Created, JoinRequest, NewItem, Participant, ProjectorKey,
                               Results, SessionState, StateChange)
from .readers import Slot, readers, spend_read
from .writers import spend_write, writers
from .store import Classes

router = APIRouter(tags=["class sessions"])
CodePath = Annotated[str, Path(max_length=20, description="The join code (case, spaces and dashes ignored).")]
Instructor = auth.InstructorDep


# What every class-session route can answer besides its own statuses: 503 (no class database on this
# server). With a JSON body: 400 (not JSON), 413 (too large), 422 (a field). With the instructor's
# dependency: 401, 403, 429 (too many wrong tokens). With {code}: 422 (too long), 404, 410, 429 (this address
# guessed too many codes: app/classes/guard.py).
BODY, INSTRUCTOR, CODE = (400, 413, 422), (401, 403, 429), (404, 410, 422, 429)
GUARDED = [Depends(guard.code_guard)]  # the routes a student reaches with a code alone


def errs(*statuses: int) -> dict:
    """deps.errors (with 503 always) plus 410 (an expired class session), each as a JSON ErrorBody
    whatever the route's own media type (the CSV, JSON Lines and event-stream routes answer errors in JSON)."""
    statuses = tuple(sorted({*statuses, 503}))
    out = deps.errors(*(s for s in statuses if s != 410))
    if 410 in statuses:
        out[410] = {"model": ErrorBody, "description": "The class session has expired"}
    body = {"application/json": {"schema": {"$ref": f"#/components/schemas/{ErrorBody.__name__}"}}}
    return {status: {"description": entry["description"], "content": body} for status, entry in out.items()}


async def classes(request: Request) -> Classes:
    found = request.app.state.classes
    if found is None:  # the database could not be opened at start-up (the server's log says why)
        raise ApiError("class sessions are unavailable on this server: its data folder cannot hold their database "
                       "(the server's log says why)", None, status=503)
    return found


ClassesDep = Annotated[Classes, Depends(classes)]  # the class sessions' store, as deps.RegistryDep is the registry's


async def _answering(code: CodePath, request: Request, c: ClassesDep) -> None:
    await spend_write(request, normalize_code(code), c.db)


async def _joining(code: CodePath, request: Request, c: ClassesDep) -> None:
    await spend_write(request, normalize_code(code), c.db, joining=True)


# A student's writes spend its own budget (app/classes/writers.py), after the code's guard
ANSWERING, JOINING = [*GUARDED, Depends(_answering)], [*GUARDED, Depends(_joining)]


def secret(request: Request, code: str) -> str | None:
    return request.cookies.get(cookie_name(code))


async def is_instructor(request: Request) -> bool:
    """Does this request carry the instructor's credentials? (No answer is refused for lacking them.)"""
    try:
        await auth.require_instructor(request)
        return True
    except ApiError:
        return False


async def on_wall(request: Request, c: Classes, code: str) -> bool:
    """Is this the session's projector (its key's cookie: app/classes/projector.py)? Read from the
    database only when such a cookie came."""
    if not request.cookies.get(projector.cookie_name(code)):
        return False
    return await to_thread.run_sync(projector.is_projector, request, c.db, code)


def _json(data: dict) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


@router.post("/api/sessions", status_code=201, response_model=Created, responses=errs(*BODY, *INSTRUCTOR, 404))
def create(req: CreateSession, _: Instructor, c: ClassesDep, registry: deps.RegistryDep, settings: deps.SettingsDep):
    """Start a class session (instructor): answers with the join `code` and the address students open.
    With `lesson`, the session gives that lesson, stage by stage."""
    lesson = None
    if req.lesson is not None:
        mixed = sorted(req.model_fields_set & {"nsp_count", "nsp_seed", "concepts", "labels", "lines"})
        if mixed:
            raise ApiError(f"{mixed[0]} cannot be given with lesson: the lesson's stages hold the items", mixed[0])
        try:
            body, _ = lesson_store.get(c.db, req.lesson)
        except ApiError as e:
            raise ApiError(e.detail, "lesson", status=e.status) from None
        lesson = lesson_checks.parse(body)
        lesson_checks.check_refs(lesson, registry, req.model)
    row = service.create(c.db, registry, req, settings.class_expiry_hours, settings.models_on_phones, lesson)
    return {"code": row.code, "display_code": display_code(row.code), "expires_at": row.expires_at.isoformat(),
            "student_url": student_url(settings, row.code, (row.plan or {}).get(joinkey.FIELD))}


@router.get("/api/sessions", responses=errs(*INSTRUCTOR))
def listing(_: Instructor, c: ClassesDep, settings: deps.SettingsDep) -> dict:
    """The live sessions (instructor), newest first, and where students can reach this server."""
    return {"sessions": service.live(c.db), "student_urls": base_urls(settings),
            "reachable": bool(base_urls(settings)), "fix": None if base_urls(settings) else STUDENTS_FLAG}


@router.post("/api/sessions/{code}/join", response_model=Participant, responses=errs(*BODY, *CODE, 409),
             dependencies=JOINING)
def join(code: CodePath, req: JoinRequest, request: Request, response: Response, c: ClassesDep,
         settings: deps.SettingsDep):
    """Join with a nickname (no account). Sets this session's participant cookie; the same browser
    joining again gets its participant back, and another browser gets it back with `rejoin`, the
    rejoin code the first one shows (404 naming `rejoin` when it does not match). With `key`, the
    session's join key from the QR link, a join gets past its address's spent code guesses."""
    refused = getattr(request.state, "door", None)  # this address's code guesses are spent (guard.py)
    if refused is not None and req.key and not req.rejoin and joinkey.opens(c.db, code, req.key):
        refused = None  # the QR link's key: no guess, so no budget; the room's and the nicknames' rules stay
    if refused is not None:  # the same answer for a right code and a wrong one, unless let in (door.py)
        if req.rejoin or not door.admitted(c.db, code, req.nickname):
            if not req.rejoin and door.is_live(c.db, code):
                door.knock(c.db, code, req.nickname, client_address(request))
            writers(request).refused_join(request)  # right code or wrong: a timing prober's tries are budgeted
            raise refused
        person, value = service.join(c.db, code, req.nickname, secret(request, code))
    elif req.rejoin:  # another browser takes its nickname back with the rejoin code (app/classes/rejoin.py)
        person, value = rejoin.recover(c.db, code, req.nickname, req.rejoin)
    else:
        try:
            person, value = service.join(c.db, code, req.nickname, secret(request, code),
                                         guard.JoinBudget(request))
        except ApiError as e:
            if e.status == 409 and secret(request, code) is None:
                writers(request).refused_join(request)  # a taken nickname from no browser of the class
            raise
    readers(request).remember(normalize_code(code), value)  # budgeted as a student from its first read
    hours = settings.class_expiry_hours
    response.set_cookie(cookie_name(code), value, max_age=int(hours * 3600) + 3600, httponly=True,
                        samesite="strict", secure=request.url.scheme == "https", path="/")
    return {"id": person.id, "nickname": person.nickname, "rejoin_code": rejoin.rejoin_code(service.secret_hash(value))}


@router.post("/api/sessions/{code}/projector", status_code=204, responses=errs(*BODY, *CODE, 403, 409),
             dependencies=GUARDED)
def open_projector(code: CodePath, req: ProjectorKey, request: Request, c: ClassesDep, settings: deps.SettingsDep):
    """The projector link's key, traded for this browser's projector cookie: its reads show the stage
    as the class sees it (no control, no answer before its reveal), not counted as a student's. From an
    address whose code guesses are spent (guard.py) only the right key gets in; any other answer is
    that address's usual 429, so a wrong code or key tells a guesser nothing."""
    refused = getattr(request.state, "door", None)
    try:
        projector.check_key(c.db, code, req.key)
    except ApiError:
        if refused is not None:
            raise refused from None
        raise
    response = Response(status_code=204)
    response.set_cookie(projector.cookie_name(code), req.key, max_age=int(settings.class_expiry_hours * 3600) + 3600,
                        httponly=True, samesite="strict", secure=request.url.scheme == "https", path="/")
    return response


@router.post("/api/sessions/{code}/answers", status_code=201, responses=errs(*BODY, *CODE, 403, 409),
             dependencies=ANSWERING)
def answer(code: CodePath, req: AnswerRequest, request: Request, c: ClassesDep, registry: deps.RegistryDep) -> dict:
    """Answer the item the class is on (once: a second answer is 409)."""
    return service.answer(c.db, registry, code, secret(request, code), req)


@router.get("/api/sessions/{code}", response_model=SessionState, response_model_exclude_none=True,
            responses=errs(*CODE), dependencies=GUARDED)
async def get_state(code: CodePath, request: Request, c: ClassesDep, registry: deps.RegistryDep,
                    settings: deps.SettingsDep):
    """Where the class is (page, item, locked, revealed), how many joined and answered; this
    browser's participant; nicknames only for the instructor or with the leaderboard on."""
    teacher = await is_instructor(request)
    wall = not teacher and await on_wall(request, c, code)
    if not teacher and not wall:  # a student's own budget, or its address's (app/classes/readers.py)
        await spend_read(request, normalize_code(code), c.db)
    out = await to_thread.run_sync(views.state, c.db, registry, code, secret(request, code), teacher)
    if wall or teacher:  # where to join (the QR code), with the join key a guesser cannot guess
        key = out.get("join_key") if teacher else await to_thread.run_sync(joinkey.stored, c.db, code)
        out["join_url"] = student_url(settings, out["code"], key)
    return out


@router.put("/api/sessions/{code}/state", response_model=SessionState, response_model_exclude_none=True,
            responses=errs(*BODY, *INSTRUCTOR, *CODE))
def put_state(code: CodePath, req: StateChange, _: Instructor, c: ClassesDep, registry: deps.RegistryDep):
    """Follow me (page, item), lock, reveal, leaderboard, end (instructor)."""
    service.change(c.db, registry, code, req)
    return views.state(c.db, registry, code, None, True)


@router.post("/api/sessions/{code}/items", status_code=201, responses=errs(*BODY, *INSTRUCTOR, *CODE, 409))
def add_item(code: CodePath, req: NewItem, _: Instructor, c: ClassesDep, registry: deps.RegistryDep) -> dict:
    """Add a Be-the-BERT sentence (text + positions to hide) or a line to label (instructor)."""
    return service.add_item(c.db, registry, code, req)


@router.delete("/api/sessions/{code}/participants/{participant_id}", status_code=204,
               responses=errs(*INSTRUCTOR, *CODE))
def remove(code: CodePath, participant_id: int, _: Instructor, c: ClassesDep):
    """Remove a nickname (instructor): its answers leave the results; that browser may join again
    under another nickname."""
    service.remove(c.db, code, participant_id)
    return Response(status_code=204)


@router.delete("/api/sessions/{code}/participants", responses=errs(*INSTRUCTOR, *CODE))
def remove_silent(code: CodePath, _: Instructor, c: ClassesDep,
                  never_answered: Annotated[Literal["true"], Query(description=(
                      "Must be true: remove the nicknames that have never answered anything (single nicknames: "
                      ".../participants/{id})."))]) -> dict:
    """Remove, in one call, every nickname that has never answered anything (instructor): what a
    join flood leaves behind. Their places are free again. Answers {"removed": how many}."""
    return {"removed": room.remove_silent(c.db, code)}


@router.get("/api/sessions/{code}/results", response_model=Results, responses=errs(*CODE), dependencies=GUARDED)
async def results(code: CodePath, request: Request, c: ClassesDep, registry: deps.RegistryDep):
    """Pooled counts per item (anonymous). Before the teacher reveals an item only the instructor sees it."""
    teacher = await is_instructor(request)
    if not teacher and not await on_wall(request, c, code):
        await spend_read(request, normalize_code(code), c.db)
    return await to_thread.run_sync(views.results, c.db, registry, code, teacher)


async def live_code(code: CodePath, c: ClassesDep, registry: deps.RegistryDep) -> str:
    """The stored code of a live session: 404/410 before a stream opens (not inside it)."""
    norm = normalize_code(code)
    await to_thread.run_sync(views.state, c.db, registry, norm, None, False)
    return norm


async def stream_slot(norm: Annotated[str, Depends(live_code)], request: Request, c: ClassesDep) -> Slot | None:
    """A student's (or an address's) open stream, counted before the stream starts: 429 past the cap
    (app/classes/readers.py); the instructor is not counted. Released when the stream ends."""
    if await is_instructor(request) or await on_wall(request, c, norm):
        return None
    return await to_thread.run_sync(readers(request).stream, request, norm, c.db)


async def _student_state(c: Classes, registry, norm: str) -> str:
    return _json(await to_thread.run_sync(views.state, c.db, registry, norm, None, False))


@router.get("/api/sessions/{code}/events", response_class=EventSourceResponse, responses=errs(*CODE),
            dependencies=GUARDED)
async def events(norm: Annotated[str, Depends(live_code)], slot: Annotated[Slot | None, Depends(stream_slot)],
                 request: Request, c: ClassesDep, registry: deps.RegistryDep) -> AsyncIterable[ServerSentEvent]:
    """Server-sent events. `state` (the state as GET /api/sessions/{code} gives it without this
    browser's own fields) whenever the teacher changes it; for the instructor and the projector's own
    link also on every new answer or participant, with `results` (the projector's: what a student may
    read, the revealed items). `gone` when the session ends its life (deleted, expired)."""
    try:
        async for event in _events(norm, request, c, registry):
            yield event
    finally:
        if slot is not None:
            slot.release()


async def _events(norm: str, request: Request, c: Classes, registry) -> AsyncIterable[ServerSentEvent]:
    teacher = await is_instructor(request)
    wall = not teacher and await on_wall(request, c, norm)  # the projector's own link: every answer counts on it
    relevant = (lambda key: key) if teacher or wall else (lambda key: key[0])
    async for watch, key in c.hub.follow(norm, relevant):
        if key is None:
            yield ServerSentEvent(event="gone", raw_data=_json({"code": norm}))
            return
        try:
            if teacher or wall:  # the wall: the state and the results as a student may read them
                state = await to_thread.run_sync(views.state, c.db, registry, norm, None, teacher)
                pooled = await to_thread.run_sync(views.results, c.db, registry, norm, teacher)
                yield ServerSentEvent(event="state", raw_data=_json(state))
                yield ServerSentEvent(event="results", raw_data=_json(pooled))
            else:  # one read per change for every student: the first stream to wake starts it, the rest await it
                shared = watch.cache.get(key[0])
                if shared is None:
                    shared = watch.cache[key[0]] = asyncio.ensure_future(_student_state(c, registry, norm))
                yield ServerSentEvent(event="state", raw_data=await asyncio.shield(shared))
        except ApiError:  # expired or deleted between the poll and the read
            yield ServerSentEvent(event="gone", raw_data=_json({"code": norm}))
            return


@router.get("/api/sessions/{code}/export.csv", response_class=deps.CsvFile, responses=errs(*INSTRUCTOR, *CODE))
def export(code: CodePath, _: Instructor, c: ClassesDep, registry: deps.RegistryDep):
    """Every answer with its nickname (instructor), as CSV; for NSP, Be the BERT and the concept check
    also right or wrong, the right answer, the item's text and whether the item was revealed."""
    text = views.export_csv(c.db, registry, code)
    name = f"class-{normalize_code(code)}.csv"
    return Response(text, media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})


@router.get("/api/sessions/{code}/labels.jsonl", response_class=deps.JsonLinesFile,
            responses=errs(*INSTRUCTOR, *CODE))
def label_task(code: CodePath, _: Instructor, c: ClassesDep, registry: deps.RegistryDep):
    """Label together's pooled labels as a fine-tune task file (instructor): JSON Lines
    {"text", "label"}, one per line the class agreed on (the majority; a tie is left out)."""
    text = views.label_task(c.db, registry, code)
    name = f"class-{normalize_code(code)}-labels.jsonl"
    return Response(text, media_type="application/x-ndjson; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})


@router.delete("/api/sessions/{code}", status_code=204, responses=errs(*INSTRUCTOR, *CODE))
def delete(code: CodePath, _: Instructor, c: ClassesDep):
    """Delete the session and everything its students sent (instructor)."""
    service.delete_session(c.db, code)
    return Response(status_code=204)


# --- the report (app/classes/report.py): the teacher's, during and after the session, until it expires ---

@router.get("/api/sessions/{code}/report.json", responses=errs(*INSTRUCTOR, *CODE))
def report_file(code: CodePath, _: Instructor, c: ClassesDep, registry: deps.RegistryDep):
    """The class's report (instructor): each student's score on NSP, Be the BERT and the concept check
    (the revealed items count), right or wrong per answer, each item's text and right answer, the
    class's accuracy and BERT's. One file to keep; the /report page draws it."""
    data = report.build(c.db, registry, code)
    return Response(_json(data), media_type="application/json",
                    headers={"Content-Disposition": f'attachment; filename="class-{data["code"]}-report.json"'})


@router.get("/api/sessions/{code}/scores.csv", response_class=deps.CsvFile, responses=errs(*INSTRUCTOR, *CODE))
def scores_file(code: CodePath, _: Instructor, c: ClassesDep, registry: deps.RegistryDep):
    """One row per student (instructor): right and counted items per scored activity, and the total."""
    data = report.build(c.db, registry, code)
    return Response(report.scores_csv(data), media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="class-{data["code"]}-scores.csv"'})
