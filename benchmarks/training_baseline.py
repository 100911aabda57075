"""A deliberately straightforward PyTorch trainer: the yardstick for benchmarks/training_speed.py.

It is what a first version typically looks like (separate q/k/v projections, attention written
out with a stored lower-triangular mask, exact GELU, post-hoc Python batching, plain Adam with a
constant learning rate). It shares the data and the architecture sizes with the real trainer so
that the benchmark compares training code, not models."""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class NaiveAttention(nn.Module):
    def __init__(self, d, n_head, context, causal):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.proj = nn.Linear(d, d)
        self.n_head = n_head
        self.causal = causal
        self.register_buffer("tril", torch.tril(torch.ones(context, context)))

    def forward(self, x, pad_mask=None):
        B, T, C = x.shape
        hs = C // self.n_head
        q = self.q(x).view(B, T, self.n_head, hs).transpose(1, 2)
        k = self.k(x).view(B, T, self.n_head, hs).transpose(1, 2)
        v = self.v(x).view(B, T, self.n_head, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        if self.causal:
            att = att.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        if pad_mask is not None:
            att = att.masked_fill(~pad_mask[:, None, None, :], float("-inf"))
        att = F.softmax(att, dim=-1)
        return self.proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))


class NaiveBlock(nn.Module):
    def __init__(self, d, n_head, n_ff, context, causal):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = NaiveAttention(d, n_head, context, causal)
        self.fc, self.out = nn.Linear(d, n_ff), nn.Linear(n_ff, d)

    def forward(self, x, pad_mask=None):
        x = x + self.attn(self.ln1(x), pad_mask)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class NaiveModel(nn.Module):
    def __init__(self, vocab, d, n_layer, n_head, n_ff, context, causal):
        super().__init__()
        self.tok, self.pos, self.seg = nn.Embedding(vocab, d), nn.Embedding(context, d), nn.Embedding(2, d)
        self.blocks = nn.ModuleList(NaiveBlock(d, n_head, n_ff, context, causal) for _ in range(n_layer))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)
        self.nsp = nn.Linear(d, 2)
        self.causal = causal

    def forward(self, idx, segments=None):
        B, T = idx.shape
        x = self.tok(idx) + self.pos(torch.arange(T))
        pad_mask = None
        if segments is not None:
            x = x + self.seg(segments)
            pad_mask = idx != 0
        for b in self.blocks:
            x = b(x, pad_mask)
        h = self.ln(x)
        return self.head(h), self.nsp(h[:, 0])


def naive_gpt_batch(data: torch.Tensor, batch_size: int, context: int):
    ix = torch.randint(len(data) - context - 1, (batch_size,))
    x = torch.stack([data[i:i + context] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + context] for i in ix])
    return x, y


def naive_step(model, opt, family, batch):
    if family == "gpt":
        x, y = batch
        logits, _ = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
    else:
        ids, seg, mlm_labels, nsp_labels = batch
        logits, nsp = model(ids, seg)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), mlm_labels.view(-1), ignore_index=-100) \
            + F.cross_entropy(nsp, nsp_labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()
