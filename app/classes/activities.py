"""The four pooled activities: what an item shows a student, what answer it takes, what the
teacher reveals, and how a class's answers pool.

- nsp: the NSP quiz bank of the session's model set (the items the teacher planned); BERT's answer
  is P(IsNext) from the same model call the NSP quiz scores with (app/routers/nsp.py).
- fill ("Be the BERT"): a sentence the teacher wrote with characters to hide; BERT's distribution
  per hidden character comes from the Mask-Fill code (app/routers/mask_fill.py, BERT.fill).
  (Schema version 4 renamed it from bert: an activity is named for what the class does, not a model.)

The model that answers an activity beside the class is the family whose spec lists it
(app/contract/families.py, `activities`); its answer is the pooled result's "model".
- concept: the concept-check bank (app/concepts.json).
- label: lines the teacher chose, labelled with the session's label names; the pooled labels
  (majority per line; a tie is left out) are a fine-tune task file (JSON Lines text/label).

Items are strings: the quiz item id, the concept question id, or the key of a stored item."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..errors import ApiError
from ..registry import Registry
from ..concepts import bank as concept_bank
from ..contract.families import SPECS
from ..inputs import label as nsp_label, masked_input, pair_ids, quiz_bank

ACTIVITIES = ("nsp", "fill", "concept", "label")
PAGES = ("lobby", *ACTIVITIES, "applet", "end")  # applet: a lesson's applet stage (app/lessons/presenter.py)
NAMES = {"lobby": "Waiting room", "nsp": "NSP class set", "fill": "Be the BERT", "concept": "Concept check",
         "label": "Label together", "applet": "Demo", "end": "The end"}
NSP_CHOICES = ["IsNext", "NotNext"]
TOP_K = 5  # BERT's guesses shown per hidden character
_answers: dict[tuple, dict] = {}  # (model set id, activity, item, payload) -> the model's answer; computed once per process


@dataclass
class Context:
    """What the pooling of one session needs: the model registry, the session's plan and stored items."""
    registry: Registry
    model: str | None
    plan: dict
    stored: dict[tuple[str, str], dict] = field(default_factory=dict)  # (activity, key) -> payload

    def keys(self, activity: str) -> list[str]:
        if activity in ("nsp", "concept"):
            return list(self.plan.get(activity, []))
        return [key for (act, key) in self.stored if act == activity]

    def payload(self, activity: str, key: str) -> dict:
        """The item's own data; 404 naming `item` when the session has no such item."""
        if key not in self.keys(activity):
            raise ApiError(f"this class session has no {activity} item {key[:64]!r}", "item", status=404)
        if activity == "nsp":
            bank = {it["id"]: it for it in quiz_bank(self.registry.get(self.model))}
            return bank[key]
        if activity == "concept":
            return next(q for q in concept_bank() if q["id"] == key)
        return self.stored[(activity, key)]


def content(ctx: Context, activity: str, key: str) -> dict:
    """What a student's screen shows for an item (never the truth)."""
    p = ctx.payload(activity, key)
    if activity == "nsp":
        return {"a": p["a"], "b": p["b"], "choices": NSP_CHOICES}
    if activity == "concept":  # the choices' text only: which one has no "why" would give the key away
        return {"topic": p["topic"], "question": p["question"], "choices": [c["text"] for c in p["choices"]]}
    if activity == "fill":
        parts, last = [], 0
        for pos in p["positions"]:
            parts.append(p["text"][last:pos])
            last = pos + 1
        parts.append(p["text"][last:])
        return {"parts": parts, "masks": len(p["positions"])}
    return {"text": p["text"], "choices": list(ctx.plan.get("labels", []))}


def _line(text: str) -> str:
    return " ".join(text.split())


def item_text(ctx: Context, activity: str, key: str) -> str:
    """An item as the report and the CSV write it, on one line (the play's line breaks as spaces: a CSV
    cell would show them as \\x0a): NSP's two sentences, Be the BERT's sentence with each hidden
    character as _, the concept question, the line to label."""
    if activity == "nsp":
        p = ctx.payload(activity, key)
        return f"A: {_line(p['a'])} | B: {_line(p['b'])}"
    if activity == "fill":
        return _line("_".join(content(ctx, activity, key)["parts"]))
    p = ctx.payload(activity, key)
    return _line(p["question"] if activity == "concept" else p["text"])


def check_answer(ctx: Context, activity: str, key: str, answer: str) -> str:
    """The answer as stored; 422 naming `answer` when it is not one this item takes."""
    p = ctx.payload(activity, key)
    if activity == "nsp":
        choices = NSP_CHOICES
    elif activity == "concept":
        choices = [str(k) for k in range(len(p["choices"]))]
    elif activity == "label":
        choices = list(ctx.plan.get("labels", []))
    else:
        n = len(p["positions"])
        if len(answer) != n:
            raise ApiError(f"answer must be {n} character{'s' * (n > 1)}, one per hidden character", "answer")
        # A hidden character is never a space (add_item refuses hiding one), so a space here is a box
        # left empty: stored, it would count in the reveal as the class's guess.
        if any(ch.isspace() for ch in answer):
            raise ApiError("answer must have a character for every hidden one: no spaces (a hidden character "
                           "is never a space)", "answer")
        return answer
    if answer not in choices:
        raise ApiError(f"answer must be one of {', '.join(choices)}", "answer")
    return answer


def truth(ctx: Context, activity: str, key: str) -> str | None:
    """The right answer in the stored form (None for labelling: there the class decides)."""
    p = ctx.payload(activity, key)
    if activity == "nsp":
        return nsp_label(bool(p["is_next"]))
    if activity == "concept":
        return str(p["answer"])
    if activity == "fill":
        return "".join(p["text"][pos] for pos in p["positions"])
    return None


def explained(ctx: Context, activity: str, key: str) -> dict:
    """What a reveal adds besides the truth: for a concept question, why each wrong choice is
    wrong (None for the key) and the explanation; nothing for the other activities."""
    if activity != "concept":
        return {}
    p = ctx.payload(activity, key)
    return {"why": [c.get("why") for c in p["choices"]], "explanation": p["explanation"]}


def answer_text(activity: str, key: str, answer: str) -> str:
    """An answer as a person reads it: a concept answer is stored as the choice's index, shown as its text."""
    if activity == "concept":
        question = next((q for q in concept_bank() if q["id"] == key), None)
        if question is not None and answer.isdigit() and int(answer) < len(question["choices"]):
            return question["choices"][int(answer)]["text"]
    return answer


def answerer(activity: str) -> str | None:
    """The family that answers `activity` beside the class (its spec lists it), or None."""
    return next((s.name for s in SPECS.values() if activity in s.activities), None)


def model_answer(ctx: Context, activity: str, key: str) -> dict | None:
    """The model's own answer to an item: NSP's P(IsNext) and label, or the mask-fill distribution."""
    family = answerer(activity)
    if family is None:
        return None
    models = ctx.registry.get(ctx.model)
    cache_key = (models.id, activity, key, repr(ctx.payload(activity, key)) if activity == "fill" else "")
    if cache_key not in _answers:
        model = ctx.registry.task(family, ctx.model)
        p = ctx.payload(activity, key)
        if activity == "nsp":
            a_ids, b_ids, _ = pair_ids(model, p["a"], p["b"])
            prob = model.p_is_next(a_ids, b_ids)
            out = {"answer": nsp_label(prob >= 0.5), "p_is_next": prob}
        else:
            ids, masks, originals, _ = masked_input(model.vocab, p["text"], p["positions"], model.context)
            fills = model.fill(ids, masks, TOP_K, originals)
            out = {"answer": "".join(f["predictions"][0]["char"] for f in fills),
                   "masks": [{"predictions": f["predictions"], "truth": f["original"]} for f in fills]}
        if len(_answers) > 4096:
            _answers.clear()
        _answers[cache_key] = out
    return _answers[cache_key]


def pool(ctx: Context, activity: str, key: str, answers: list[str], revealed: bool, split: bool | None = None) -> dict:
    """One item's pooled result: how many answered; the split (counts per answer, per hidden
    character for Be the BERT) only with `split` (by default: once revealed, so that nobody, not even
    the projector, can follow the majority before the reveal); once revealed the truth, BERT's answer
    and the share of the class that was right."""
    out: dict = {"activity": activity, "item": key, "answered": len(answers), "revealed": revealed}
    if activity != "fill":
        out["choices"] = content(ctx, activity, key)["choices"]
    if not (revealed if split is None else split):
        return out
    if activity == "fill":
        n = len(ctx.payload(activity, key)["positions"])
        out["counts"] = [dict(Counter(a[j] for a in answers).most_common()) for j in range(n)]
    else:
        choices = out["choices"]
        keys = [str(k) for k in range(len(choices))] if activity == "concept" else choices
        counted = Counter(answers)
        out["counts"] = {k: counted.get(k, 0) for k in keys}
    right = truth(ctx, activity, key)
    if revealed:
        out["truth"] = right
        out["model"] = model_answer(ctx, activity, key)
        out.update(explained(ctx, activity, key))
        if right is not None:
            out["class_correct"] = sum(a == right for a in answers) / len(answers) if answers else None
        if activity == "fill":  # per hidden character: the share of the class that had that one right
            out["char_correct"] = [sum(a[j] == right[j] for a in answers) / len(answers) if answers else None
                                   for j in range(len(right))]
    return out


def majority(counts: dict[str, int]) -> str | None:
    """The label most of the class chose for a line, or None on a tie or no votes."""
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    if not ranked or ranked[0][1] == 0 or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
        return None
    return ranked[0][0]
