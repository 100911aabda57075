"""A request's text as BERT's inputs, refused with a 4xx naming the parameter when it cannot be:
[MASK] markers or positions (mask-fill, compare, objectives, Be the BERT), a sentence pair and
the NSP quiz bank (the NSP page and the class's NSP set). Read by the routers and by the class
activities alike (app/classes/), so no service imports a router."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .contract import MASK, MASK_MARKER, Vocab, bert_pair_room, bert_text_room
from .errors import ApiError
from .schemas import MAX_MASKS

if TYPE_CHECKING:
    from .registry import ModelSet
    from .tasks.bert import BERT


def check_length(n: int, context: int) -> None:
    if n > bert_text_room(context):
        raise ApiError(f"text is {n} characters long; BERT reads at most {bert_text_room(context)} "
                       f"(its context of {context} minus [CLS] and [SEP])", "text")


def masked_input(vocab: Vocab, text: str, positions: list[int] | None, context: int):
    """(ids, mask positions, original ids at the masks or None, unknown characters)."""
    has_marker = MASK_MARKER in text
    if positions is not None and has_marker:
        raise ApiError("give either [MASK] markers in text or positions, not both", "positions")
    if positions is None:
        if not has_marker:
            raise ApiError("text has no [MASK] marker; add one or give positions", "text")
        ids, unknown, masks = [], [], []
        for k, piece in enumerate(text.split(MASK_MARKER)):
            if k:  # each marker becomes one [MASK] token
                masks.append(len(ids))
                ids.append(MASK)
            piece_ids, piece_unknown = vocab.encode(piece, offset=len(ids))
            ids += piece_ids
            unknown += piece_unknown
        if len(masks) > MAX_MASKS:
            raise ApiError(f"text has {len(masks)} [MASK] markers; at most {MAX_MASKS} are allowed", "text")
        check_length(len(ids), context)
        return ids, masks, None, unknown
    if not positions:
        raise ApiError("positions must not be empty (or leave it out and use [MASK] markers)", "positions")
    check_length(len(text), context)
    seen = set()
    for i, p in enumerate(positions):
        if not 0 <= p < len(text):
            raise ApiError(f"positions[{i}] = {p} is out of range for a text of {len(text)} characters", "positions")
        if p in seen:
            raise ApiError(f"positions lists {p} more than once", "positions")
        seen.add(p)
    ids, unknown = vocab.encode(text)
    originals = [ids[p] for p in positions]
    for p in positions:
        ids[p] = MASK
    return ids, list(positions), originals, unknown


def label(is_next: bool) -> str:
    return "IsNext" if is_next else "NotNext"


def quiz_bank(models: ModelSet) -> list[dict]:
    if not models.quiz:
        raise ApiError(f"model set {models.id!r} has no NSP quiz bank on this server (see /api/health)", None,
                       status=503)
    return models.quiz


def pair_ids(model: BERT, a: str, b: str) -> tuple[list[int], list[int], list[dict]]:
    room = bert_pair_room(model.context)  # [CLS] a [SEP] b [SEP]
    if len(a) + len(b) > room:
        param = "a" if len(a) >= room else "b"
        raise ApiError(f"a and b together are {len(a) + len(b)} characters; BERT reads at most {room} "
                       f"(its context of {model.context} minus [CLS] and two [SEP])", param)
    a_ids, a_unknown = model.vocab.encode(a)
    b_ids, b_unknown = model.vocab.encode(b)
    unknown = [{**u, "segment": "a"} for u in a_unknown] + [{**u, "segment": "b"} for u in b_unknown]
    return a_ids, b_ids, unknown
