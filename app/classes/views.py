"""What a class session looks like to each viewer: its state (student, projector, instructor),
the pooled results, the CSV export and the label task file. Reads only."""
from __future__ import annotations

import csv
import io
import json
import time
from collections import defaultdict

from sqlalchemy import select

from ..errors import ApiError
from ..registry import Registry
from . import activities, letin, room
from ..lessons import presenter
from .cells import neutral
from .codes import display_code
from .db import Database
from .models import Answer, ClassSession, Participant
from .rejoin import rejoin_code
from .scores import SCORED, counted, right_counts, tally
from .service import LEADERS, aware, context, find, me, phase


def _answers(s, row: ClassSession) -> list[tuple[int, str, str, str]]:
    """(participant id, activity, item, answer) of every participant still in the session."""
    return list(s.execute(select(Answer.participant_id, Answer.activity, Answer.item, Answer.answer)
                          .join(Participant, Participant.id == Answer.participant_id)
                          .where(Answer.session_id == row.id, Participant.removed.is_(False))
                          .order_by(Answer.id)))


def _scores(ctx: activities.Context, row: ClassSession, answers) -> dict[int, int]:
    """Right answers per participant, on the items that count (app/classes/scores.py: the revealed ones)."""
    return right_counts(ctx, row.plan, answers)


def state(db: Database, registry: Registry, code: str, secret: str | None, instructor: bool) -> dict:
    with db.reading() as s:
        row = find(s, code)
        ctx = context(s, row, registry)
        person = me(s, row, secret)
        people = list(s.scalars(select(Participant).where(Participant.session_id == row.id,
                                                          Participant.removed.is_(False)).order_by(Participant.id)))
        answers = _answers(s, row)
        silent_count = len(room.silent(s, row)) if instructor else 0
    on_item = {pid: value for pid, act, key, value in answers if (act, key) == (row.page, row.item)}
    out = {"code": row.code, "display_code": display_code(row.code), "page": row.page,
           "page_name": activities.NAMES[row.page], "item": row.item, "locked": row.locked, "revealed": row.revealed,
           "leaderboard": row.leaderboard, "room_locked": row.joins_locked,
           "max_participants": row.max_participants, "paused": bool((row.plan or {}).get("paused")), "join_screen": bool((row.plan or {}).get("join_screen")),
           "models_on_phones": bool((row.plan or {}).get("models_on_phones")),
           "ended": row.ended_at is not None, "expires_at": aware(row.expires_at).isoformat(),
           "version": row.version, "joined": len(people), "answered": len(on_item),
           "me": {"id": person.id, "nickname": person.nickname, "rejoin_code": rejoin_code(person.secret_hash)}
           if person else None}
    if person and (row.page == "end" or row.ended_at is not None):  # the phone's own score, to its own cookie only
        out["me"]["score"] = tally(counted(ctx, row.plan), answers, person.id)
    if row.page in activities.ACTIVITIES and row.item:
        keys = ctx.keys(row.page)
        current = {"activity": row.page, "item": row.item, "number": keys.index(row.item) + 1, "of": len(keys),
                   "content": activities.content(ctx, row.page, row.item),
                   "your_answer": on_item.get(person.id) if person else None}
        if row.revealed:
            current["truth"] = activities.truth(ctx, row.page, row.item)
            current.update(activities.explained(ctx, row.page, row.item))
        if row.page == "label":  # every line is open at once (for every screen), and the student's own labels
            current["lines"] = [{"item": k, "text": ctx.payload("label", k)["text"]} for k in keys]
            if person:
                current["your_labels"] = {key: value for pid, act, key, value in answers
                                          if pid == person.id and act == "label"}
        out["current"] = current
    out.update(presenter.view(row.plan, instructor))  # a lesson's stages, and its applet now
    scores = _scores(ctx, row, answers) if instructor or row.leaderboard else {}
    if instructor:
        out["projector_key"] = (row.plan or {}).get("projector_key")
        out["join_key"] = (row.plan or {}).get("join_key")  # the QR link's (app/classes/joinkey.py)
        out["participants"] = [{"id": p.id, "nickname": p.nickname, "answered": p.id in on_item,
                                "score": scores.get(p.id, 0)} for p in people]
        out["items"] = {act: [{"item": k, "title": title(ctx, act, k), "phase": phase_name(row.plan, act, k)}
                              for k in ctx.keys(act)] for act in activities.ACTIVITIES}
        out["silent"] = silent_count
        out.update(letin.view(row.plan or {}, time.time()))  # who is let in, who waits at the door
    if row.leaderboard:
        ranked = sorted(people, key=lambda p: (-scores.get(p.id, 0), p.id))[:LEADERS]
        out["leaders"] = [{"nickname": p.nickname, "score": scores.get(p.id, 0)} for p in ranked]
    return out


def phase_name(plan: dict, activity: str, key: str) -> str:
    locked, revealed = phase(plan or {}, activity, key)
    return "revealed" if revealed else "locked" if locked else "open"


def title(ctx: activities.Context, activity: str, key: str) -> str:
    p = ctx.payload(activity, key)
    text = {"nsp": lambda: p["a"] + " / " + p["b"], "concept": lambda: p["question"]}.get(activity, lambda: p["text"])()
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:59] + "…"


def results(db: Database, registry: Registry, code: str, instructor: bool) -> dict:
    """Pooled results per item that has answers or is current. Students see revealed items only;
    before an item's reveal everyone (the projector too) gets how many answered, not the split."""
    with db.reading() as s:
        row = find(s, code)
        ctx = context(s, row, registry)
        answers = _answers(s, row)
    revealed = set(row.plan.get("revealed", []))
    grouped: dict[tuple[str, str], list[str]] = defaultdict(list)
    for _, act, key, value in answers:
        grouped[(act, key)].append(value)
    items = []
    for act in activities.ACTIVITIES:
        for key in ctx.keys(act):
            shown = f"{act}:{key}" in revealed
            if not instructor and not shown:
                continue
            if (act, key) in grouped or (act, key) == (row.page, row.item):
                items.append(activities.pool(ctx, act, key, grouped.get((act, key), []), shown))
    nsp = [it for it in items if it["activity"] == "nsp" and it["revealed"] and it["answered"]]
    class_right = sum(it["counts"][it["truth"]] for it in nsp)
    asked = sum(it["answered"] for it in nsp)
    summary = {"nsp": {"items": len(nsp), "answers": asked,
                       "class_accuracy": class_right / asked if asked else None,
                       "bert_accuracy": (sum(it["model"]["answer"] == it["truth"] for it in nsp) / len(nsp))
                       if nsp else None}}
    return {"code": row.code, "items": items, "summary": summary}


def export_csv(db: Database, registry: Registry, code: str) -> str:
    """Every answer with its nickname; for the scored activities also whether it is right, the right
    answer, the item's text and whether the item was revealed (only revealed items count: scores.py)."""
    with db.reading() as s:
        row = find(s, code)
        ctx = context(s, row, registry)
        rows = list(s.execute(select(Participant.nickname, Participant.removed, Answer.activity, Answer.item,
                                     Answer.answer, Answer.created_at)
                              .join(Participant, Participant.id == Answer.participant_id)
                              .where(Answer.session_id == row.id).order_by(Answer.id)))
    revealed = counted(ctx, row.plan)
    known: dict[tuple[str, str], tuple] = {}  # (activity, item) -> (truth, its text, the item's text)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["nickname", "removed", "activity", "item", "answer", "right", "right_answer", "item_text",
                     "revealed", "answered_at"])
    for nickname, removed, act, key, value, at in rows:
        if (act, key) not in known:
            truth = activities.truth(ctx, act, key) if act in SCORED else None
            known[(act, key)] = (truth, "" if truth is None else activities.answer_text(act, key, truth),
                                 activities.item_text(ctx, act, key))
        truth, right_answer, text = known[(act, key)]
        # never a formula in a spreadsheet, never a raw control character (app/classes/cells.py)
        cells = [nickname, removed, act, key, activities.answer_text(act, key, value),
                 "" if truth is None else "yes" if value == truth else "no", right_answer, text,
                 "yes" if (act, key) in revealed else "no" if act in SCORED else "", aware(at).isoformat()]
        writer.writerow([neutral(c) for c in cells])
    return out.getvalue()


def label_task(db: Database, registry: Registry, code: str) -> str:
    """The pooled labels as a fine-tune task file: one JSON object per line, {"text", "label"}."""
    with db.reading() as s:
        row = find(s, code)
        ctx = context(s, row, registry)
        answers = _answers(s, row)
    if not ctx.keys("label"):
        raise ApiError("this session has no lines to label", "code", status=404)
    lines = []
    for key in ctx.keys("label"):
        pooled = activities.pool(ctx, "label", key, [v for _, a, k, v in answers if (a, k) == ("label", key)], False,
                                 split=True)
        chosen = activities.majority(pooled["counts"])
        if chosen is not None:
            lines.append(json.dumps({"text": ctx.payload("label", key)["text"], "label": chosen}, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)
