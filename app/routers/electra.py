"""ELECTRA, live: the discriminator's "replaced?" probability at every character of the student's
own sentence. With `positions`, ELECTRA's recipe is played out first: every listed position is
masked and the set's BERT (the generator) fills EVERY one with a character drawn from its guess;
a fill equal to the original counts as original, as in ELECTRA's training. Without them the
text is judged as the student wrote it (type a sentence with a wrong letter and watch)."""
from __future__ import annotations

from fastapi import APIRouter
from .. import deps
from ..contract import bert_text_room
from ..errors import ApiError
from ..schemas.lessons import ElectraRequest, ElectraResponse
from ..tasks.electra import generator_fill

router = APIRouter(tags=["lesson"])


@router.post("/api/objectives/electra", response_model=ElectraResponse, responses=deps.INFERENCE_ERRORS)
def electra(req: ElectraRequest, registry: deps.RegistryDep):
    """The discriminator's verdict at every character, after the generator filled `positions`."""
    disc = registry.electra(req.model)
    room = bert_text_room(disc.context)
    if len(req.text) > room:
        raise ApiError(f"text is {len(req.text)} characters long; ELECTRA reads at most {room} "
                       f"(its context of {disc.context} minus [CLS] and [SEP])", "text")
    bad = [p for p in req.positions if not 0 <= p < len(req.text)]
    if bad:
        raise ApiError(f"position {bad[0]} is outside the text (0 to {len(req.text) - 1})", "positions")
    ids, unknown = disc.vocab.encode(req.text)
    positions = sorted(set(req.positions))
    shown = generator_fill(registry.bert(req.model), ids, positions, req.seed) if positions else ids
    probs = disc.replaced_probs(shown)
    chars = [{"char": disc.vocab.token(s), "original": ch, "filled": i in positions, "replaced": s != o,
              "p_replaced": float(p)} for i, (ch, s, o, p) in enumerate(zip(req.text, shown, ids, probs))]
    return deps.respond(ElectraResponse, {
        "chars": chars, "filled": len(positions), "replaced": sum(c["replaced"] for c in chars),
        "flagged": sum(c["p_replaced"] > 0.5 for c in chars),
        "correct": sum((c["p_replaced"] > 0.5) == c["replaced"] for c in chars),
        "generator": "the set's BERT: one draw from its guess at every masked position" if positions else "none",
        "unknown_chars": unknown})
