"""One Transformer, two pretraining objectives.

GPT and BERT below share every module of the backbone. What makes one a left-to-right language
model and the other a bidirectional masked-language model is the attention mask:

    GPT:  position i may attend to positions j <= i        (causal mask)
    BERT: position i may attend to every non-padding j     (bidirectional)

plus their embeddings (BERT adds segment embeddings) and heads (next-char vs MLM + NSP).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class TransformerConfig:
    vocab_size: int
    context: int = 128  # maximum sequence length (learned absolute positions)
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 192
    n_ff: int = 768  # hidden width of the MLP
    dropout: float = 0.0  # tiny models on a few MB of text rarely need it at these budgets

    def to_dict(self) -> dict:
        return asdict(self)


class SelfAttention(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        assert cfg.n_embd % cfg.n_head == 0
        self.n_head = cfg.n_head
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)  # one matmul for q, k and v
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.dropout = cfg.dropout

    def forward(self, x, attn_mask=None, is_causal=False, kv_cache=None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        if kv_cache is not None and torch.onnx.is_in_onnx_export():
            y, kv_cache.k, kv_cache.v = cached_attention_onnx(q, k, v, kv_cache, self.n_head)
            return self.proj(y)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        if kv_cache is not None:
            # Incremental decoding: attend over the cached keys/values plus the new ones.
            k, v = kv_cache.write(k, v)  # (B, nh, P + T, hs)
        # attn_mask: bool (.., T, Tk), True = may attend, or float (added to the scores).
        # is_causal: the same as a lower-triangular mask, but lets the fused kernel skip the masked half.
        if torch.is_autocast_enabled("cpu"):
            y = attention_written_out(q, k, v, attn_mask, is_causal, self.dropout if self.training else 0.0)
        else:
            y = F.scaled_dot_product_attention(
                q, k, v, attn_mask=attn_mask, is_causal=is_causal,
                dropout_p=self.dropout if self.training else 0.0,
            )  # (B, nh, T, hs)
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.proj(y)


def attention_written_out(q, k, v, attn_mask=None, is_causal=False, dropout_p=0.0):
    """softmax(q k^T / sqrt(hs) + mask) v, written out: the same maths as F.scaled_dot_product_attention.

    attn_mask: bool (True = may attend) or float (added to the scores). Used for bf16 training
    (--precision bf16): at head sizes 16-32 PyTorch's fused CPU kernel is slow in bf16 (forward +
    backward at batch 48, 4 heads, 64 characters: 17 ms, vs 5.7 ms in fp32), while two batched
    bf16 matmuls with the softmax kept in fp32 take 2.7 ms."""
    T, Tk = q.size(-2), k.size(-2)
    if is_causal:
        attn_mask = torch.ones(T, Tk, dtype=torch.bool, device=q.device).tril(Tk - T)
    scores = (q @ k.transpose(-2, -1)).float() * (1.0 / math.sqrt(q.size(-1)))  # (B, nh, T, Tk)
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        scores = scores.masked_fill(~attn_mask, float("-inf"))
    elif attn_mask is not None:
        scores = scores + attn_mask
    weights = F.dropout(scores.softmax(dim=-1), dropout_p)
    return weights.to(v.dtype) @ v  # (B, nh, T, hs)


def cached_attention_onnx(q, k, v, cache, n_head: int):
    """The decoding graph's attention as ONE onnxruntime node (com.microsoft GroupQueryAttention,
    with as many key/value heads as query heads, i.e. plain multi-head attention).

    Same maths as the eager path (split heads, write the new keys/values into the cache after the
    `cache.length` filled rows, causal softmax(q k^T / sqrt(hs)) v in absolute positions, merge
    heads). Why this op: at one new character per run, onnxruntime's per-node overhead and
    copies of the cache, not arithmetic, are most of the cost. One node per layer instead of ~15,
    and when the caller binds each present_* output to the memory of its past_* input (IOBinding),
    the op writes the new rows in place instead of copying the whole cache every character.
    Traced only by the ONNX exporter; export.check_parity holds it to the eager path.
    q, k, v: (B, T, C). Returns y (B, T, C) and the present key/value buffers (B, nh, context, hs)."""
    B, T, C = q.shape
    total = cache.length + T  # filled rows after this call, a 0-d int64 tensor
    seqlens_k = (total - 1).to(torch.int32).reshape(1).expand(B)  # the op's convention: total - 1 per row
    y, present_k, present_v = torch.onnx.ops.symbolic_multi_out(
        "com.microsoft::GroupQueryAttention",
        (q, k, v, cache.past_k, cache.past_v, seqlens_k, total.to(torch.int32)),
        {"num_heads": n_head, "kv_num_heads": n_head},  # causal (offset by the cached rows) is built in
        dtypes=(q.dtype, q.dtype, q.dtype), shapes=(q.shape, cache.past_k.shape, cache.past_v.shape), version=1)
    return y, present_k, present_v


class MLP(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.fc = nn.Linear(cfg.n_embd, cfg.n_ff)
        self.out = nn.Linear(cfg.n_ff, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x):
        return self.drop(self.out(F.gelu(self.fc(x), approximate="tanh")))


class Block(nn.Module):
    """Pre-LayerNorm Transformer block (trains stably without a long warmup)."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.n_embd)
        self.attn = SelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = MLP(cfg)

    def forward(self, x, attn_mask=None, is_causal=False, kv_cache=None):
        x = x + self.attn(self.ln1(x), attn_mask, is_causal, kv_cache)
        return x + self.mlp(self.ln2(x))


class Transformer(nn.Module):
    """The shared backbone: embeddings -> blocks -> final LayerNorm."""

    def __init__(self, cfg: TransformerConfig, n_segments: int = 0):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.pos_emb = nn.Embedding(cfg.context, cfg.n_embd)
        self.seg_emb = nn.Embedding(n_segments, cfg.n_embd) if n_segments else None
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd)

    def forward(self, idx, positions, segments=None, attn_mask=None, is_causal=False, kv_caches=None):
        x = self.tok_emb(idx) + self.pos_emb(positions)  # (B, T, C)
        if self.seg_emb is not None:
            x = x + self.seg_emb(segments)
        x = self.drop(x)
        for i, block in enumerate(self.blocks):
            x = block(x, attn_mask, is_causal, None if kv_caches is None else kv_caches[i])
        return self.ln_f(x)


def init_weights(module: nn.Module, n_layer: int) -> None:
    """GPT-2 style init: N(0, 0.02), residual projections scaled by 1/sqrt(2 * n_layer)."""
    for name, p in module.named_parameters():
        if p.dim() >= 2:
            std = 0.02 / math.sqrt(2 * n_layer) if name.endswith(("proj.weight", "out.weight")) else 0.02
            nn.init.normal_(p, mean=0.0, std=std)
        elif name.endswith("bias"):
            nn.init.zeros_(p)


class KVCache:
    """One layer's keys/values in a buffer of `context` rows, of which the first `length` are
    filled (as onnxruntime's decoding ops keep them): a step writes its rows after them and
    attends over exactly the characters before it and itself."""

    def __init__(self, past_k, past_v, length):
        self.past_k, self.past_v = past_k, past_v  # (B, nh, context, hs) each
        self.length = length  # 0-d int64 tensor: rows already filled

    def write(self, k, v):
        P, T = int(self.length), k.shape[2]
        # A new buffer (the graph's "present" output); the caller's buffer is left as it was.
        self.k, self.v = self.past_k.clone(), self.past_v.clone()
        self.k[:, :, P:P + T], self.v[:, :, P:P + T] = k, v
        return self.k[:, :, :P + T], self.v[:, :, :P + T]  # (B, nh, P + T, hs)


class GPT(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.transformer = Transformer(cfg)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        init_weights(self, cfg.n_layer)
        self.lm_head.weight = self.transformer.tok_emb.weight  # weight tying

    def forward(self, idx):
        B, T = idx.shape
        positions = torch.arange(T, device=idx.device)
        # THE line that makes this a GPT: each character sees only itself and what came before.
        h = self.transformer(idx, positions, is_causal=True)
        return self.char_logits(h)  # (B, T, vocab)

    def char_logits(self, h):
        return self.lm_head(h)

    def reading(self, idx):
        """What the Transformer is given besides the characters: (positions, segments, allowed), the
        attention page's inspection graph (training/inspect_export.py) reads the mask from here."""
        return torch.arange(idx.shape[1], device=idx.device), None, self.allowed(idx)

    def allowed(self, idx):
        """forward()'s rule written out as a (T, T) boolean mask, key j visible to query i iff j <= i
        (what the attention page draws; forward itself lets the fused kernel apply it)."""
        T = idx.shape[1]
        return torch.ones(T, T, dtype=torch.bool, device=idx.device).tril()

    def forward_with_cache(self, idx, past, past_length):
        """Process T new characters that follow `past_length` cached ones.

        past: one (key, value) pair of buffers per layer, each (B, nh, context, hs), whose first
        past_length rows hold the cached characters (past_length 0: a plain forward that also
        fills the cache). Returns the logits of the new characters and the buffers with their
        keys/values written at rows past_length .. past_length + T - 1. Fixed-size buffers (not
        a cache that grows) so that onnxruntime can update them in place, one tensor per layer
        and kind so that nothing is split or re-stacked. The caller keeps past_length + T <= context."""
        B, T = idx.shape
        qpos = past_length + torch.arange(T, device=idx.device)  # absolute positions of the new characters
        attn_mask = None  # the exported graph's attention node applies the causal rule itself
        if not torch.onnx.is_in_onnx_export():
            # The same causal rule as forward(), in absolute positions: key j visible to query i
            # iff j <= i; as an additive mask (0 or -inf) built once for all layers.
            kpos = torch.arange(int(past_length) + T, device=idx.device)
            hidden = kpos[None, :] > qpos[:, None]  # (T, P + T)
            attn_mask = torch.zeros(hidden.shape, device=idx.device).masked_fill(hidden, float("-inf"))
        caches = [KVCache(k, v, past_length) for k, v in past]
        h = self.transformer(idx, qpos, attn_mask=attn_mask, kv_caches=caches)
        logits = self.lm_head(h)
        return logits, [(c.k, c.v) for c in caches]


class BERT(nn.Module):
    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.transformer = Transformer(cfg, n_segments=2)  # segment A = 0, segment B = 1
        # MLM head (as in BERT): transform, then a decoder tied to the input embeddings.
        self.mlm_transform = nn.Sequential(nn.Linear(cfg.n_embd, cfg.n_embd), nn.GELU(approximate="tanh"), nn.LayerNorm(cfg.n_embd))
        self.mlm_bias = nn.Parameter(torch.zeros(cfg.vocab_size))
        # NSP head on [CLS]: pooler (dense + tanh), then IsNext / NotNext.
        self.pooler = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.nsp_head = nn.Linear(cfg.n_embd, 2)  # class 0 = IsNext, 1 = NotNext
        init_weights(self, cfg.n_layer)

    def forward(self, idx, segments, pad_id: int = 0):
        B, T = idx.shape
        positions = torch.arange(T, device=idx.device)
        h = self.transformer(idx, positions, segments, attn_mask=self.allowed(idx, pad_id))  # (B, T, C)
        mlm_logits = self.char_logits(h)  # (B, T, vocab)
        nsp_logits = self.nsp_head(torch.tanh(self.pooler(h[:, 0])))  # (B, 2)
        return mlm_logits, nsp_logits

    def reading(self, idx, segments):
        """(positions, segments, allowed): what forward() gives the Transformer (see GPT.reading)."""
        return torch.arange(idx.shape[1], device=idx.device), segments, self.allowed(idx)

    def allowed(self, idx, pad_id: int = 0):
        # THE line that makes this a BERT: every character sees every (non-padding) character.
        return (idx != pad_id)[:, None, None, :]  # (B, 1, 1, T)

    def char_logits(self, h):
        return self.mlm_transform(h) @ self.transformer.tok_emb.weight.t() + self.mlm_bias


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())  # tied weights are counted once
