"""The other pretraining objectives, made visible: what the loss sees (CLM: every position; MLM:
the selected ~15 %), BERT's corruption per character, in spans and in whole words, its recovery
split by what happened at a position over many draws on held-out text, and the replaced-token
view ELECTRA learns from. The permutation (XLNet) grid and the GPT vs BERT table are drawn in the
browser from the rule and the model cards."""
from __future__ import annotations


from fastapi import APIRouter, Request

from .. import deps
from ..contract import bert_text_room
from ..schemas.lessons import ObjectivesCorruptRequest, ObjectivesCorruptResponse, RecoveryRequest, RecoveryResponse
from ..tasks import corruption
from ..inputs import check_length, quiz_bank

router = APIRouter(tags=["lesson"])

HELD_OUT = ("the NSP quiz bank's IsNext pairs (models/nsp_quiz.json): sentence A, a newline and sentence B, "
            "consecutive lines of the held-out plays")


@router.post("/api/objectives/corrupt", response_model=ObjectivesCorruptResponse, responses=deps.INFERENCE_ERRORS)
def corrupt(req: ObjectivesCorruptRequest, registry: deps.RegistryDep):
    """One corruption of `text` by the chosen scheme, BERT's recovery at each selected position,
    the MLM loss over them and GPT's CLM loss over every position of the same text."""
    bert, gpt = registry.bert(req.model), registry.gpt(req.model)
    check_length(len(req.text), bert.context)
    ids, unknown = bert.vocab.encode(req.text)
    out = corruption.demo(bert, req.text, ids, req.scheme, req.mask_rate, req.mean_span, req.seed)
    mlm = {"loss": out.pop("mlm_loss"), "positions": len(out["selected"])}
    return deps.respond(ObjectivesCorruptResponse, {
        "tokens": [bert.vocab.token(t) for t in ids], "scheme": req.scheme, "unknown_chars": unknown,
        "mlm": mlm, "clm": corruption.clm_loss(gpt, ids), **out})


def held_out(models, room: int) -> tuple[list[str], list[list[int]]]:
    strings = [(it["a"] + "\n" + it["b"])[:room] for it in quiz_bank(models) if it.get("is_next")]
    strings = strings or [it["a"][:room] for it in quiz_bank(models)]
    return strings, [models.vocab.encode(s)[0] for s in strings]


# Recovery results are deterministic (seeded) and cost up to a few CPU-seconds: a class pressing
# "Run" with the same settings is served from the set's own memo (app/registry.ModelSet.memo).
CACHED_PER_MODEL = 32


def recovery_figures(registry, model: str | None, scheme: str, mask_rate: float, mean_span: float, draws: int,
                     seed: int) -> dict:
    """BERT's top-1 recovery over `draws` corruptions of the set's held-out text, split by action:
    what the route answers and what `python -m benchmarks.tables recovery` prints for docs/models.md."""
    bert, models = registry.bert(model), registry.get(model)
    strings, texts = held_out(models, bert_text_room(bert.context))
    key = (scheme, mask_rate, mean_span, draws, seed)
    out = models.memo("recovery", key, lambda: corruption.recovery(bert, texts, strings, scheme, mask_rate,
                                                                     mean_span, draws, seed), keep=CACHED_PER_MODEL)
    return {"scheme": scheme, "draws": draws, "texts": min(draws, len(texts)), "source": HELD_OUT, **out}


@router.post("/api/objectives/recovery", response_model=RecoveryResponse, responses=deps.INFERENCE_ERRORS)
def recovery(req: RecoveryRequest, registry: deps.RegistryDep):
    """BERT's top-1 recovery over `draws` corruptions of held-out text, split by action."""
    return deps.respond(RecoveryResponse, recovery_figures(registry, req.model, req.scheme, req.mask_rate,
                                                           req.mean_span, req.draws, req.seed))
