"""The teacher's report of a class session: each student's score on the scored activities, right or
wrong per answer, each item's text and right answer, the class's accuracy and BERT's. Computed from
the database on every request, so it is there while the session lives (until it expires) and always
agrees with the answers; the page (/report), report.json and scores.csv all read `build`.

Which items count is app/classes/scores.py's rule (the revealed ones); the report lists the
unrevealed items that have answers too, marked, so that the teacher sees what the class answered
there. Items the class never met (neither revealed nor answered) are left out."""
from __future__ import annotations

import csv
import io

from sqlalchemy import select

from ..registry import Registry
from . import activities
from .cells import neutral
from .codes import display_code
from .db import Database
from .models import Participant
from .scores import SCORED, counted, tally
from .service import aware, context, find, utcnow
from .views import _answers

RULE = ("Scores count only the items you revealed (pressed Reveal): before that nobody was told the answer. "
        "Items you did not reveal are listed when someone answered them, marked “not revealed”, and not "
        "counted. An item a student did not answer counts as not right. Be the BERT is right only when every "
        "hidden character is.")


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def build(db: Database, registry: Registry, code: str) -> dict:
    with db.reading() as s:
        row = find(s, code)
        ctx = context(s, row, registry)
        people = list(s.scalars(select(Participant).where(Participant.session_id == row.id,
                                                          Participant.removed.is_(False))))
        answers = _answers(s, row)  # a removed nickname's answers have left the results, and the report
    truths = counted(ctx, row.plan)
    given = {(pid, act, key): value for pid, act, key, value in answers}
    items = []
    for act, name in SCORED.items():
        for number, key in enumerate(ctx.keys(act), 1):
            values = [value for (_, a, k), value in given.items() if (a, k) == (act, key)]
            if (act, key) not in truths and not values:
                continue  # an item the class never met (the plan holds every concept question, say)
            truth = activities.truth(ctx, act, key)
            model = activities.model_answer(ctx, act, key)  # None where no model answers (the concept check)
            right = sum(v == truth for v in values)
            items.append({"activity": act, "name": name, "item": key, "number": number,
                          "text": activities.item_text(ctx, act, key), "truth": truth,
                          "right_answer": activities.answer_text(act, key, truth),
                          "revealed": (act, key) in truths, "answered": len(values), "right": right,
                          "class_accuracy": _share(right, len(values)),
                          "model_answer": activities.answer_text(act, key, model["answer"]) if model else None,
                          "model_right": model["answer"] == truth if model else None})
    students = []
    for p in sorted(people, key=lambda p: (p.nickname.casefold(), p.id)):
        mine = {f"{it['activity']}:{it['item']}": {
                    "answer": activities.answer_text(it["activity"], it["item"], given[(p.id, it["activity"], it["item"])]),
                    "right": given[(p.id, it["activity"], it["item"])] == it["truth"]}
                for it in items if (p.id, it["activity"], it["item"]) in given}
        students.append({"nickname": p.nickname, "score": tally(truths, answers, p.id), "answers": mine})
    per_activity = []
    for act, name in SCORED.items():
        mine = [it for it in items if it["activity"] == act]
        shown = [it for it in mine if it["revealed"]]
        answered, right = sum(it["answered"] for it in shown), sum(it["right"] for it in shown)
        judged = [it for it in shown if it["model_right"] is not None]
        per_activity.append({"activity": act, "name": name, "items": len(mine), "counted": len(shown),
                             "answers": answered, "right": right, "class_accuracy": _share(right, answered),
                             "model_right": sum(it["model_right"] for it in judged) if judged else None,
                             "model_accuracy": _share(sum(it["model_right"] for it in judged), len(judged))})
    answered, right = sum(a["answers"] for a in per_activity), sum(a["right"] for a in per_activity)
    return {"code": row.code, "display_code": display_code(row.code), "made_at": utcnow().isoformat(),
            "ended": row.ended_at is not None, "expires_at": aware(row.expires_at).isoformat(),
            "model": "BERT", "rule": RULE, "students": students, "items": items, "activities": per_activity,
            "class": {"answers": answered, "right": right, "class_accuracy": _share(right, answered)}}


def scores_csv(report: dict) -> str:
    """One row per student: right and counted items per scored activity, and the total."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["nickname", *(f"{act}_{end}" for act in SCORED for end in ("right", "of")),
                     "total_right", "total_of", "percent"])
    for s in report["students"]:
        parts = {p["activity"]: p for p in s["score"]["activities"]}
        cells = [s["nickname"], *(parts[act][end] if act in parts else 0 for act in SCORED for end in ("right", "of")),
                 s["score"]["right"], s["score"]["of"],
                 round(100 * s["score"]["right"] / s["score"]["of"]) if s["score"]["of"] else ""]
        writer.writerow([neutral(c) for c in cells])  # a nickname is never a formula (app/classes/cells.py)
    return out.getvalue()
