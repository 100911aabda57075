"""The attention applet: the page (who MAY attend to whom, the rule, drawn in the browser) and
POST /api/attention (who DOES: the real weights of one layer and head, or their mean, from the
inspection graphs <family>.attn.onnx of the selected model set; see app/tasks/attention.py): GPT
and BERT always, T5 and PLM where the set has them."""
from __future__ import annotations

from fastapi import APIRouter

from .. import deps
from ..contract.families import for_page
from ..schemas.lessons import AttentionRequest, AttentionResponse
from ..tasks import attention as inspect

router = APIRouter(tags=["attention"])


@router.post("/api/attention", response_model=AttentionResponse, responses=deps.INFERENCE_ERRORS)
def attention(req: AttentionRequest, registry: deps.RegistryDep):
    """Attention weights (query, key) of the chosen `layer` and `head` (-1: their mean) of every family
    the attention page shows (app/contract/families.py), each over the text as it reads it (GPT the
    text; BERT [CLS] text [SEP] plus `pad` [PAD] slots; T5 with a span hidden and written back; PLM
    its two streams for the order `seed` draws), each checked against the served model."""
    models = registry.get(req.model)
    # an optional family (T5, PLM) is shown where the set has it with its inspection graph, else null
    shown = [s.name for s in for_page("attention") if (req.families is None or s.name in req.families)
             and (not s.optional or (s.name in models.meta.families and inspect.has_graph(models, s.name)))]
    for family in shown:
        registry.task(family, req.model)  # 404 / 409 / 503 naming `model` first
    ids, unknown = models.vocab.encode(req.text)
    out = {f: inspect.attention_of(models, f, ids, req.pad, req.seed, registry.runtime, req.layer, req.head)
           for f in shown}
    return deps.respond(AttentionResponse, {**out, "unknown_chars": unknown})
