"""A class session that gives a lesson: the lesson's stages resolved into the session's plan and
items when it starts, and the walk through them (←/→ move through a class stage's items, then on to
the next stage). The resolved stage list lives in the session's plan (the database), so a restart
resumes at the same stage with the same items.

plan["lesson"] = {"id", "title", "stages": [stage, ...]}, each stage:
    {"kind": "applet", "title", "page", "state", "phones", "notes"}
    {"kind": "nsp" | "fill" | "concept" | "label", "title", "items": [item keys of the session], "notes"}
plan["stage"]   = the index of the stage the class is on (None in the waiting room, before the first)
plan["applets"] = {stage index: the applet's query as the teacher left it} (its URL state, as the
                  teacher's own applet wrote it; the projector and the phones load the same)"""
from __future__ import annotations

import random
import re
from urllib.parse import parse_qsl, urlencode

from ..errors import ApiError
from ..inputs import quiz_bank
from ..registry import Registry
from .schema import RESERVED_KEYS, STATE_KEY, Lesson

APPLET_PAGE = "applet"  # the session's page while the class is on an applet stage
MAX_QUERY = 4000
_KEY = re.compile(STATE_KEY)


def query_of(state: dict) -> str:
    """An applet's settings as its URL's query (lists as the pages write them: 3,4,5; booleans 1/0)."""
    def text(v):
        if isinstance(v, bool):
            return "1" if v else "0"
        if isinstance(v, list):
            return ",".join(str(x) for x in v)
        return str(v)
    return urlencode({k: text(v) for k, v in state.items()})


def resolve(lesson: Lesson, registry: Registry, model: str | None) -> tuple[dict, list[tuple[str, str, dict]]]:
    """(the session's plan fields, its stored items as (activity, key, payload)) for a lesson."""
    nsp: list[str] = []
    concept: list[str] = []
    labels: list[str] = []
    items: list[tuple[str, str, dict]] = []
    stages = []
    for stage in lesson.stages:
        out = {"kind": stage.kind, "title": stage.title, "notes": stage.notes}
        if stage.kind == "applet":
            out.update(page=stage.page, state=stage.state, phones=stage.phones)
        elif stage.kind == "nsp":
            if stage.items is not None:
                keys = list(stage.items)
            else:  # the stated seed draws the same pairs from the same bank, every time the lesson is given
                ids = [it["id"] for it in quiz_bank(registry.get(model))]
                keys = random.Random(stage.seed).sample(ids, min(stage.count, len(ids)))
            nsp += [k for k in keys if k not in nsp]
            out["items"] = keys
        elif stage.kind == "concept":
            keys = list(dict.fromkeys(stage.questions))
            concept += [k for k in keys if k not in concept]
            out["items"] = keys
        elif stage.kind == "fill":
            out["items"] = []
            for it in stage.items:
                key = f"f{sum(a == 'fill' for a, _, _ in items) + 1}"
                items.append(("fill", key, {"text": it.text, "positions": sorted(it.positions)}))
                out["items"].append(key)
        else:  # label: the session's label names and its lines (one label stage per lesson)
            labels = list(stage.labels)
            out["items"] = []
            for line in stage.lines:
                key = f"l{sum(a == 'label' for a, _, _ in items) + 1}"
                items.append(("label", key, {"text": line.strip()}))
                out["items"].append(key)
        stages.append(out)
    plan = {"nsp": nsp, "nsp_seed": None, "concept": concept, "labels": labels, "revealed": [],
            "lesson": {"title": lesson.title, "stages": stages}, "stage": None, "applets": {}}
    return plan, items


def stages(plan: dict) -> list[dict]:
    return ((plan or {}).get("lesson") or {}).get("stages") or []


def start_of(plan: dict, index: int) -> tuple[str, str | None]:
    """(page, item) where stage `index` starts: an applet stage's page, or a class stage's first item."""
    found = stages(plan)
    if not found:
        raise ApiError("this class session gives no lesson: it has no stages", "stage", status=409)
    if not 0 <= index < len(found):
        raise ApiError(f"stage must be between 0 and {len(found) - 1}", "stage", status=404)
    stage = found[index]
    if stage["kind"] == "applet":
        return APPLET_PAGE, None
    return stage["kind"], (stage["items"] or [None])[0]


def placed(plan: dict, page: str, item: str | None, asked: int | None) -> dict:
    """The plan with the stage the class is on now: the one asked for, else the current one when it
    holds (page, item), else the first that does (the teacher picked an activity by its button)."""
    found = stages(plan)
    if not found:
        return plan
    if asked is not None:
        return {**plan, "stage": asked}
    if page not in ("applet", "nsp", "fill", "concept", "label"):  # the waiting room, the end: no stage of its own
        return plan

    def holds(stage):
        return (stage["kind"] == "applet") if page == APPLET_PAGE else (stage["kind"] == page and item in stage["items"])
    now = plan.get("stage")
    if now is not None and 0 <= now < len(found) and holds(found[now]):
        return plan
    return {**plan, "stage": next((k for k, s in enumerate(found) if holds(s)), now)}


def with_query(plan: dict, query: str) -> dict:
    """The plan with the applet's state as the teacher's applet now has it (its URL's query)."""
    found = stages(plan)
    now = plan.get("stage")
    if not found or now is None or not 0 <= now < len(found) or found[now]["kind"] != "applet":
        raise ApiError("applet_query is for an applet stage, and the class is not on one", "applet_query", status=409)
    if len(query) > MAX_QUERY:
        raise ApiError(f"applet_query must be at most {MAX_QUERY} characters", "applet_query")
    pairs = parse_qsl(query.lstrip("?"), keep_blank_values=True)
    kept = [(k, v) for k, v in pairs if k not in RESERVED_KEYS]
    if any(not _KEY.match(k) for k, _ in kept):
        raise ApiError("applet_query holds a key no applet has (keys are lowercase letters and _)", "applet_query")
    return {**plan, "applets": {**plan.get("applets", {}), str(now): urlencode(kept)}}


def view(plan: dict, instructor: bool) -> dict:
    """What every screen learns of the lesson: its stage titles and where the class is; on an applet
    stage, the applet and its state now. The teacher's notes go to the teacher only."""
    found = stages(plan)
    if not found:
        return {}
    now = plan.get("stage")
    out = {"lesson": {"title": plan["lesson"]["title"], "stage": now, "of": len(found),
                      "stages": [{"kind": s["kind"], "title": s["title"], "items": len(s.get("items", [])),
                                  **({"notes": s["notes"], "keys": s.get("items", [])} if instructor else {})}
                                 for s in found]}}
    stage = found[now] if now is not None and 0 <= now < len(found) else {"kind": None}
    if stage["kind"] == "applet":
        query = plan.get("applets", {}).get(str(now), query_of(stage["state"]))
        out["applet"] = {"page": stage["page"], "query": query, "phones": stage["phones"], "title": stage["title"]}
    return out


def preview(lesson: Lesson, registry: Registry, model: str | None) -> list[dict]:
    """Each stage as the class will meet it: an applet's address, or a class stage's items as a
    screen draws them (activities.content) with their right answers (the teacher's preview)."""
    from ..classes import activities  # the class activities draw the items; the lessons room only walks them

    plan, items = resolve(lesson, registry, model)
    ctx = activities.Context(registry, model, plan, {(a, k): p for a, k, p in items})
    out = []
    for stage in plan["lesson"]["stages"]:
        shown = {"kind": stage["kind"], "title": stage["title"]}
        if stage["kind"] == "applet":
            shown.update(url=stage["page"] + "?" + query_of(stage["state"]), phones=stage["phones"])
        else:
            keys = stage["items"]
            shown["items"] = [{"activity": stage["kind"], "item": k, "number": n + 1, "of": len(keys),
                               "content": activities.content(ctx, stage["kind"], k),
                               "truth": activities.truth(ctx, stage["kind"], k)} for n, k in enumerate(keys)]
        out.append(shown)
    return out
