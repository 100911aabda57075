"""The attention applet: the page (who MAY attend to whom, the rule, drawn in the browser) and
POST /api/attention (who DOES: the real weights of one layer and head, or their mean, from the
inspection graphs <family>.attn.onnx of the selected model set; see app/tasks/attention.py)."""
from __future__ import annotations

from fastapi import APIRouter, Request

from .. import deps
from ..schemas.lessons import AttentionRequest, AttentionResponse
from ..tasks import attention as inspect

router = APIRouter(tags=["attention"])


@router.post("/api/attention", response_model=AttentionResponse, responses=deps.INFERENCE_ERRORS)
def attention(req: AttentionRequest, registry: deps.RegistryDep):
    """Attention weights (query, key) of the chosen `layer` and `head` (-1: their mean) of GPT over the
    text and of BERT over [CLS] text [SEP] plus `pad` [PAD] slots, each checked against the served model."""
    registry.gpt(req.model), registry.bert(req.model)  # 404 / 409 / 503 naming `model` first
    models = registry.get(req.model)
    ids, unknown = models.vocab.encode(req.text)
    runtime = registry.runtime
    gpt = inspect.gpt_attention(models, ids, runtime, req.layer, req.head)
    seq, bert = inspect.bert_attention(models, ids, req.pad, runtime, req.layer, req.head)
    return deps.respond(AttentionResponse, {
        "gpt": {"tokens": [models.vocab.token(t) for t in ids], **gpt},
        "bert": {"tokens": [models.vocab.token(t) for t in seq], **bert},
        "unknown_chars": unknown})
