"""BERT's masked-character prediction: fill [MASK]s, and the 80/10/10 corruption recipe."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from .. import deps
from ..tasks import corruption
from ..contract import MASK, MASK_MARKER, Vocab, bert_text_room
from ..errors import ApiError
from ..schemas import MAX_MASKS, CorruptRequest, CorruptResponse, MaskFillRequest, MaskFillResponse

router = APIRouter(tags=["mask-fill"])


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


@router.post("/api/mask-fill", response_model=MaskFillResponse, responses=deps.INFERENCE_ERRORS)
def mask_fill(req: MaskFillRequest, registry: deps.RegistryDep):
    """Predict the characters hidden behind each mask (BERT reads the whole text, both directions)."""
    model = registry.bert(req.model)
    deps.check_top_k(req.top_k, model.vocab.size, allow_zero=False)
    ids, masks, originals, unknown = masked_input(model.vocab, req.text, req.positions, model.context)
    results = model.fill(ids, masks, req.top_k, originals)
    return deps.respond(MaskFillResponse, {"tokens": [model.vocab.token(t) for t in ids],
                                           "unknown_chars": unknown, "masks": results})


@router.post("/api/mask-fill/corrupt", response_model=CorruptResponse, responses=deps.INFERENCE_ERRORS)
def corrupt(req: CorruptRequest, registry: deps.RegistryDep):
    """Apply BERT's pretraining corruption (select each character with probability mask_rate; of
    those 80 % [MASK], 10 % a random character, 10 % unchanged) and show what the model recovers."""
    model = registry.bert(req.model)
    check_length(len(req.text), model.context)
    ids, unknown = model.vocab.encode(req.text)
    out = corruption.demo(model, req.text, ids, "char", req.mask_rate, 3.0, req.seed)
    return deps.respond(CorruptResponse, {"tokens": [model.vocab.token(t) for t in ids], "unknown_chars": unknown, **out})


@router.api_route("/mask-fill", methods=["GET", "HEAD"], response_class=HTMLResponse, include_in_schema=False)
def mask_fill_page(request: Request):
    return deps.render(request, "mask_fill.html", "mask_fill", "Mask fill")
