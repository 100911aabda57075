"""The attention applet: the page (who MAY attend to whom, the rule, drawn in the browser) and
POST /api/attention (who DOES: the real weights of one layer and head, or their mean, from the
inspection graphs <family>.attn.onnx of the selected model set; see app/tasks/attention.py)."""
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
    text; BERT [CLS] text [SEP] plus `pad` [PAD] slots), each checked against the served model."""
    shown = [s.name for s in for_page("attention")]
    for family in shown:
        registry.task(family, req.model)  # 404 / 409 / 503 naming `model` first
    models = registry.get(req.model)
    ids, unknown = models.vocab.encode(req.text)
    out = {f: inspect.attention_of(models, f, ids, req.pad, registry.runtime, req.layer, req.head) for f in shown}
    return deps.respond(AttentionResponse, {**out, "unknown_chars": unknown})
