"""T5 writing freely on held-out text: what the /spans page shows, measured (issue 54).

The card's first T5 figure is teacher-forced: each hidden character is guessed after the TRUE
characters of its span so far, as in training. No student ever sees that: the page lets T5 write
each span after its sentinel from its own characters so far, greedily, and an early mistake (or a
span closed too soon) carries on. This module scores that writing on T5's own held-out draw (the
same windows and spans as the teacher-forced figure), by the page's own rule (app/tasks/t5.py
Writing, numpy only, so serving still needs no torch):

    span_char_top1   hidden characters written back right, place by place (the page's "k of n right")
    spans_exact      spans written back exactly: every character right, and no extra one
"""
from __future__ import annotations

import torch

from app.contract import SEP
from app.sampling import softmax
from app.tasks.t5 import Writing

# Windows written freely per split: the first of T5's own held-out draw (its evaluation's 1,000).
# Writing is one model run per token (about 24 a window), 25 times the teacher-forced cost, so a
# share: 200 windows are about 3,400 hidden characters in 1,200 spans (a standard error near 0.5
# points on a figure near 10 %), and `package` stays minutes, not an hour, on a 2-core CPU.
WINDOWS = 200

# The page's limit on what T5 may write (app/routers/spans.py): the hidden characters, one sentinel
# per span and 8 more, so a span written too long still shows how it went wrong.
EXTRA = 8

HOW = ("written freely, as the /spans page does: greedy (the likeliest token each time), each span after its "
       "sentinel, reading the line both ways and only what it wrote itself so far (app/tasks/t5.py Writing)")
HOW_TEACHER_FORCED = ("teacher forcing, as in training: each hidden character guessed after the TRUE characters "
                      "of its span so far, which no page shows")


def spans_of(row: list[int], prefix_len: int, vocab_size: int) -> list[list[int]]:
    """The true spans of one T5 sequence (prefix, then ⟨0⟩ span0 ⟨1⟩ span1 ... [SEP])."""
    spans: list[list[int]] = []
    for t in row[prefix_len:]:
        if t == SEP:
            break
        if t >= vocab_size:
            spans.append([])
        elif spans:
            spans[-1].append(t)
    return spans


@torch.no_grad()
def write_all(model, lines: list[Writing]) -> None:
    """Step every open line until each is done: the open lines of one length run as one batch
    (the rule is per line; the batch only saves time)."""
    while True:
        groups: dict[int, list[Writing]] = {}
        for line in lines:
            if line.open:
                groups.setdefault(len(line.seq), []).append(line)
        if not groups:
            return
        for group in groups.values():
            x = torch.tensor([line.seq for line in group])
            mask = torch.tensor([[1] * line.prefix_len + [0] * (len(line.seq) - line.prefix_len) for line in group])
            last = model(x, mask)[:, -1].float().numpy()
            for line, logits in zip(group, last):
                line.take(softmax(logits))


def first_windows(batches: list[dict], n: int = WINDOWS) -> list[dict]:
    """The first `n` windows of a draw's batches (whole batches: the draw's own are 50 each)."""
    out, have = [], 0
    for batch in batches:
        if have >= n:
            break
        out.append(batch)
        have += len(batch["idx"])
    return out


def free_running(model, batches: list[dict], vocab_size: int, context: int) -> dict:
    """Hidden characters and spans T5 writes back right by itself, on `batches` (training/t5.py
    SpanCorruption's: idx, prefix_mask)."""
    right = chars = exact = n_spans = windows = 0
    was_training = model.training
    model.eval()
    for batch in batches:
        windows += len(batch["idx"])
        rows, truths = [], []
        for ids, mask in zip(batch["idx"].tolist(), batch["prefix_mask"].tolist()):
            prefix_len = sum(mask)
            spans = spans_of(ids, prefix_len, vocab_size)
            hidden = sum(map(len, spans))
            rows.append(Writing(ids[:prefix_len], len(spans), vocab_size, context, hidden + len(spans) + EXTRA))
            truths.append(spans)
        write_all(model, rows)
        for line, spans in zip(rows, truths):
            for k, truth in enumerate(spans):
                got = line.chars(k)
                right += sum(a == b for a, b in zip(truth, got))
                exact += got == truth
            chars += sum(map(len, spans))
            n_spans += len(spans)
    model.train(was_training)
    return {"span_char_top1": right / max(chars, 1), "span_chars": chars, "spans_exact": exact / max(n_spans, 1),
            "spans": n_spans, "windows": windows, "how": HOW}
