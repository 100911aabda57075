"""Who was right: the one scoring rule of a class session, read by the leaderboard, the teacher's
report (app/classes/report.py) and each phone's own score at the end.

- Scored are the activities with a right answer (NSP, Be the BERT, the concept check); Label together
  has none (there the class decides).
- An item counts once the teacher has revealed it: before the reveal nobody was told the truth, and
  the teacher may still reopen it. An unanswered counted item is a wrong one (it is in the "of").
- An answer is right when it is the truth as stored (activities.truth): for Be the BERT, every hidden
  character exactly as in the sentence."""
from __future__ import annotations

from collections import defaultdict

from . import activities

# The scored activities, in the class's order, with the short names a score line uses.
SCORED = {"nsp": "NSP", "fill": "Be the BERT", "concept": "Concept check"}


def counted(ctx: activities.Context, plan: dict) -> dict[tuple[str, str], str]:
    """(activity, item) -> truth of every item that counts: revealed, scored, still in the session."""
    out = {}
    for done in (plan or {}).get("revealed", []):
        act, _, key = done.partition(":")
        if act in SCORED and key in ctx.keys(act):
            out[(act, key)] = activities.truth(ctx, act, key)
    return out


def right_counts(ctx: activities.Context, plan: dict, answers) -> dict[int, int]:
    """Right answers per participant id, on the items that count (`answers` as views._answers gives them)."""
    truths = counted(ctx, plan)
    out: dict[int, int] = defaultdict(int)
    for pid, act, key, value in answers:
        if truths.get((act, key)) == value:
            out[pid] += 1
    return out


def tally(truths: dict[tuple[str, str], str], answers, pid: int) -> dict:
    """One participant's score: {right, of, activities: [{activity, name, right, of}]}, an activity
    listed once it has an item that counts."""
    given = {(act, key): value for p, act, key, value in answers if p == pid}
    parts = []
    for act, name in SCORED.items():
        keys = [k for (a, k) in truths if a == act]
        if keys:
            parts.append({"activity": act, "name": name, "of": len(keys),
                          "right": sum(given.get((act, k)) == truths[(act, k)] for k in keys)})
    return {"right": sum(p["right"] for p in parts), "of": sum(p["of"] for p in parts), "activities": parts}
