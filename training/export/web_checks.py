"""The checks a family's float16 web copy must pass before the browser gets it (training/export/web.py).

Each family's entry names its own (`web_check` in training/families/<name>.py): a function
(fp32 graph bytes, fp16 graph bytes, config, chars) -> a dict with `ok` and what it measured, which
goes into the manifest as the copy's `fp16_check`. Each check replays what a page shows, by the
server's own rule where the server has one, so "the same answers" means what a student sees:

- GPT: the same greedy and seeded texts (CHECK_CHARS characters after each of a few prompts);
- BERT: the same top prediction at every position, probabilities within TOLERANCE;
- T5: the same spans written back greedily on a few fixed lines (app/tasks/t5.py T5.write, the
  /spans page's rule), each written character's probability within TOLERANCE;
- PLM: the same top prediction at every position of a few lines, guessed in fixed orders
  (app/tasks/plm.py PLM.guess), probabilities within TOLERANCE.

`check_attention` adds the family's attention graph (the attention page's, <family>.attn.onnx): its
float16 copy must draw every layer's weights within ATTENTION_TOLERANCE of the float32 one (so that
the page's 4 decimals stay the server's), since both graphs read one weights file and so are stored
the same way.
"""
from __future__ import annotations

import numpy as np

from app.contract import CLS, FIRST_CHAR, MASK, SEP, Vocab, cache_names, cache_shape, shuffled, uniform

CHECK_PROMPTS = ("To be, or not to be, ", "ROMEO:\n", "the ")
CHECK_SEEDS = (0, 1, 42)
CHECK_CHARS = 200
TOLERANCE = 1e-4  # a probability the page shows (4 decimals at most) must not move by more
# The mask shows attention weights to 4 decimals: a weight that moves by 1e-6 lands one step over in
# about 1 % of the cells (what the device's float32 arithmetic may do too: tests/app/test_engine_node.py)
ATTENTION_TOLERANCE = 1e-6
CHECK_LINES = (*CHECK_PROMPTS, "Now is the winter of our discontent")
# T5's fixed lines and the spans hidden in each: [start, end) pairs, a kept character between two
SPAN_LINES = (("To be, or not to be, that is the question", ((3, 5), (13, 16), (30, 34))),
              ("Now is the winter of our discontent", ((0, 3), (11, 17))),
              ("ROMEO:\nBut soft, what light through yonder window breaks", ((9, 13), (25, 30), (44, 50))))
PLM_SEEDS = (0, 1)  # the orders each line is guessed in (app/contract shuffled, the pages' draw)


def session(data: bytes):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])


def _draw(logits: np.ndarray, u: float | None) -> int:
    """THE draw at temperature 1 with no truncation (app/sampling.py), or greedy when u is None."""
    z = logits[FIRST_CHAR:].astype(np.float64)
    if u is None:
        return FIRST_CHAR + int(np.argmax(z))
    p = np.exp(z - z.max())
    cdf = np.cumsum(p / p.sum())
    i = int(np.searchsorted(cdf, u * cdf[-1], side="right"))
    return FIRST_CHAR + min(i, len(cdf) - 1)


def gpt_text(sess, config: dict, ids: list[int], n: int, seed: int | None) -> list[int]:
    """n characters after `ids` (KV-cached, with the window rule of app/tasks/gpt.py)."""
    context = int(config["context"])
    names = cache_names(int(config["n_layer"]))
    cache = {name: np.zeros(cache_shape(config), dtype=np.float32) for name in names}
    outputs = ["logits", *[name.replace("past_", "present_", 1) for name in names]]

    def run(new: list[int], start: int) -> np.ndarray:
        result = sess.run(outputs, {"input_ids": np.asarray([new], dtype=np.int64),
                                    "past_length": np.array(start, dtype=np.int64), **cache})
        cache.update(zip(names, result[1:]))
        return result[0][0, -1]

    seq = list(ids[-context:])
    logits = run(seq, 0)
    out = []
    for i in range(n):
        token = _draw(logits, None if seed is None else uniform(seed, i))
        out.append(token)
        seq.append(token)
        if len(seq) > context:
            seq = seq[-(context // 2):]
            logits = run(seq, 0)
        else:
            logits = run(seq[-1:], len(seq) - 1)
    return out


def encode(chars: list[str], text: str) -> list[int]:
    stoi = {ch: i + FIRST_CHAR for i, ch in enumerate(chars)}
    return [stoi.get(ch, 1) for ch in text]


def check_gpt(fp32: bytes, web: bytes, config: dict, chars: list[str]) -> dict:
    a, b = session(fp32), session(web)
    texts = same = 0
    for prompt in CHECK_PROMPTS:
        ids = encode(chars, prompt)
        for seed in (None, *CHECK_SEEDS):
            texts += 1
            same += gpt_text(a, config, ids, CHECK_CHARS, seed) == gpt_text(b, config, ids, CHECK_CHARS, seed)
    return {"ok": same == texts, "texts": texts, "same_texts": same, "chars_each": CHECK_CHARS,
            "what": "greedy and seeded (temperature 1) texts after fixed prompts"}


def check_bert(fp32: bytes, web: bytes, config: dict, chars: list[str]) -> dict:
    """Every position of a few lines masked in turn: probabilities and top-1 of both graphs."""
    a, b = session(fp32), session(web)
    room = int(config["context"]) - 2
    worst, same_top, rows = 0.0, 0, 0
    for prompt in CHECK_LINES:
        ids = encode(chars, prompt)[:room]
        batch = np.tile(np.asarray([CLS, *ids, SEP], dtype=np.int64), (len(ids), 1))
        batch[np.arange(len(ids)), np.arange(len(ids)) + 1] = MASK
        feeds = {"input_ids": batch, "token_type_ids": np.zeros_like(batch)}
        pa, pb = (_probs(s.run(["mlm_logits"], feeds)[0], len(ids)) for s in (a, b))
        worst = max(worst, float(np.abs(pa - pb).max()))
        same_top += int((pa.argmax(-1) == pb.argmax(-1)).sum())
        rows += len(ids)
    return {"ok": worst <= TOLERANCE and same_top == rows, "max_abs_prob_diff": worst,
            "tolerance": TOLERANCE, "positions": rows, "same_top1": same_top,
            "what": "each character of fixed lines masked in turn: probabilities over the characters"}


def _probs(mlm: np.ndarray, n: int) -> np.ndarray:
    z = mlm[np.arange(n), np.arange(n) + 1, FIRST_CHAR:].astype(np.float64)
    z = np.exp(z - z.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def check_t5(fp32: bytes, web: bytes, config: dict, chars: list[str]) -> dict:
    """Each fixed line's spans written back greedily by both graphs, as the /spans page writes them
    (app/tasks/t5.py: THE rule, not a second one): the same characters, probabilities within TOLERANCE."""
    from app.tasks.t5 import T5

    vocab = Vocab(chars)
    a, b = (T5(session(g), vocab, config) for g in (fp32, web))
    room = int(config["context"]) // 2  # the line, its sentinels and what is written must fit the context
    spans = same = written = 0
    worst = 0.0
    for text, cuts in SPAN_LINES:
        ids = vocab.encode(text[:room])[0]
        cuts = [(s, e) for s, e in cuts if e <= len(ids)]
        limit = sum(e - s for s, e in cuts) + len(cuts) + 8  # the page's limit (app/routers/spans.py)
        for x, y in zip(a.write(ids, cuts, limit), b.write(ids, cuts, limit)):
            spans += 1
            got_a, got_b = [w["char"] for w in x["written"]], [w["char"] for w in y["written"]]
            same += got_a == got_b
            written += len(got_a)
            worst = max([worst, *(abs(v["prob"] - w["prob"]) for v, w in zip(x["written"], y["written"]))])
    return {"ok": same == spans and worst <= TOLERANCE, "spans": spans, "same_spans": same, "chars_written": written,
            "max_abs_prob_diff": worst, "tolerance": TOLERANCE,
            "what": "spans of fixed lines written back greedily, as the /spans page does: the characters and their probabilities"}


def check_plm(fp32: bytes, web: bytes, config: dict, chars: list[str]) -> dict:
    """Every position of a few lines guessed (the whole order predicted, each place from the ones
    before it) in fixed orders, by both graphs (app/tasks/plm.py PLM.guess): top-1 and probabilities."""
    from app.tasks.plm import PLM

    vocab = Vocab(chars)
    a, b = (PLM(session(g), vocab, config) for g in (fp32, web))
    room = int(config["context"]) // 2  # the characters and one query per position
    worst, same_top, rows = 0.0, 0, 0
    for text in CHECK_LINES:
        ids = vocab.encode(text)[0][:room]
        for seed in PLM_SEEDS:
            order = shuffled(len(ids), seed)
            for x, y in zip(a.guess(ids, order, len(ids)), b.guess(ids, order, len(ids))):
                worst = max(worst, float(np.abs(x["probs"] - y["probs"]).max()))
                same_top += int(x["probs"].argmax() == y["probs"].argmax())
                rows += 1
    return {"ok": worst <= TOLERANCE and same_top == rows, "max_abs_prob_diff": worst, "tolerance": TOLERANCE,
            "positions": rows, "same_top1": same_top,
            "what": "every character of fixed lines guessed in fixed random orders: probabilities over the characters"}


def check_attention(name: str, fp32: bytes, web: bytes, chars: list[str]) -> dict:
    """The attention graph's float16 copy against its float32 graph on a fixed line: the largest
    difference of any attention weight, any layer and head (the page shows them to 4 decimals)."""
    import torch

    from ..families import family
    from . import parity_inputs

    a, b = session(fp32), session(web)
    names = [i.name for i in a.get_inputs()]
    ids = torch.tensor([encode(chars, CHECK_LINES[-1])[:32]])
    feeds = {n: t.numpy().astype(np.int64) for n, t in zip(names, parity_inputs(
        names, ids, torch.Generator().manual_seed(0), family(name).example_feeds()))}
    weights = [o.name for o in a.get_outputs() if o.name.startswith("attn_")]
    worst = max(float(np.abs(x - y).max()) for x, y in zip(a.run(weights, feeds), b.run(weights, feeds)))
    return {"ok": worst <= ATTENTION_TOLERANCE, "max_abs_weight_diff": worst, "tolerance": ATTENTION_TOLERANCE,
            "what": "the attention graph's weights (every layer and head) on a fixed line"}
