"""The short-budget protocol (issue 12, target 1): a seed-chapter-sized model trained for a fixed
number of steps on a 100K-character excerpt, with the trainer's own defaults for that step budget.

    python -m benchmarks.recipe [--source shakespeare|stdlib|PATH] [--offset 0] [--threads 1]

The excerpt's first 72K characters train, the next 8K validate, the next 20K are the test text.
GPT: perplexity on random 64-character windows of the validation text (every position of each
window scored, as the chapter does). BERT (MLM only): masked top-1 by training/evaluate.py
(15 %, 80/10/10) on the validation text.
"""
from __future__ import annotations

import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from training.data import DEFAULT_CORPUS, encode_documents, load_corpus

PROTOCOL_SIZE = dict(n_layer=2, n_embd=96, n_head=4, n_ff=256, context=64, batch_size=48)
PROTOCOL_STEPS = {"gpt": 600, "bert": 1500}


def source_text(source: str) -> str:
    """Text of a named corpus: the shipped Shakespeare's training plays, or the Python standard
    library's own .py files (on every machine with Python, and not Shakespeare)."""
    if source == "shakespeare":
        return "".join(d.text for d in load_corpus(DEFAULT_CORPUS)["train"])
    if source == "stdlib":
        return "".join(d.text for d in stdlib_documents())
    return Path(source).read_text(encoding="utf-8", errors="replace")


def stdlib_documents(max_chars: int = 6_000_000):
    """The standard library's top-level modules (sorted by name, so the same on any machine with
    the same Python), one document each, ASCII only (a char vocabulary stays small)."""
    from training.data import Document

    lib = Path(json.__file__).resolve().parents[1]
    docs, total = [], 0
    for p in sorted(lib.glob("*.py")):
        text = p.read_text(encoding="utf-8", errors="replace").encode("ascii", "ignore").decode()
        if len(text) < 2000:
            continue
        docs.append(Document(p.stem, text))
        total += len(text)
        if total >= max_chars:
            break
    return docs


def write_split_corpus(folder: Path, train: str, validation: str, test: str, train_docs: int = 8) -> Path:
    """A corpus folder with split.json: the training text cut into `train_docs` documents at line
    breaks (NSP negatives need several), one validation and one test document."""
    folder.mkdir(parents=True, exist_ok=True)
    names = {"train": [], "validation": ["validation"], "test": ["test"]}
    lines = train.splitlines(keepends=True)
    per = max(1, math.ceil(len(lines) / train_docs))
    for i in range(0, len(lines), per):
        name = f"train{i // per:02d}"
        (folder / f"{name}.txt").write_text("".join(lines[i:i + per]), encoding="utf-8")
        names["train"].append(name)
    (folder / "validation.txt").write_text(validation, encoding="utf-8")
    (folder / "test.txt").write_text(test, encoding="utf-8")
    (folder / "split.json").write_text(json.dumps(names))
    return folder


def protocol_corpus(folder: Path, source: str = "shakespeare", offset: int = 0) -> Path:
    text = source_text(source)[offset:offset + 100_000]
    if len(text) < 100_000:
        raise ValueError(f"{source} has fewer than 100,000 characters after offset {offset}")
    return write_split_corpus(folder, text[:72_000], text[72_000:80_000], text[80_000:])


@torch.no_grad()
def window_perplexity(model, tok, docs, context: int = 64, n_windows: int = 2000, seed: int = 7) -> float:
    """exp(mean cross-entropy) over random `context`-character windows, every position scored."""
    data = torch.from_numpy(np.concatenate(encode_documents(tok, docs)))
    gen = torch.Generator().manual_seed(seed)
    starts = torch.randint(len(data) - context - 1, (n_windows,), generator=gen)
    model.eval()
    total = 0.0
    for chunk in starts.split(200):
        idx = chunk[:, None] + torch.arange(context + 1)
        x, y = data[idx[:, :-1]], data[idx[:, 1:]]
        total += F.cross_entropy(model(x).transpose(1, 2), y, reduction="sum").item()
    model.train()
    return math.exp(total / (n_windows * context))


def run_protocol(family: str, corpus: Path, threads: int = 1, seed: int = 1337, log=None, **overrides) -> dict:
    """Train one family with the protocol's sizes and step count (and the trainer's defaults for
    everything else unless overridden); return the protocol's figure."""
    import io

    from training.evaluate import evaluate_bert
    from training.train import TrainConfig, Trainer

    cfg = TrainConfig(family=family, corpus=str(corpus), out=tempfile.mkdtemp(prefix=f"protocol-{family}-"),
                      steps=PROTOCOL_STEPS[family], threads=threads, seed=seed, nsp=False,
                      eval_interval=10**9, eval_batches=1, **{**PROTOCOL_SIZE, **overrides})
    trainer = Trainer(cfg)
    t0 = time.perf_counter()
    trainer.fit(log=log or io.StringIO())
    seconds = time.perf_counter() - t0
    val = trainer.splits["validation"]
    out = {"family": family, "steps": trainer.step, "seconds": round(seconds, 1), "overrides": overrides}
    if family == "gpt":
        out["val_perplexity"] = round(window_perplexity(trainer.model, trainer.tok, val), 3)
    else:
        trainer.model.eval()
        out["masked_top1"] = round(evaluate_bert(trainer.model, trainer.tok, val)["masked_top1"], 4)
    return out


def main(argv=None) -> None:
    import argparse

    p = argparse.ArgumentParser(prog="python -m benchmarks.recipe", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", default="shakespeare", help="shakespeare, stdlib or a text file")
    p.add_argument("--offset", type=int, default=0, help="where the 100K excerpt starts")
    p.add_argument("--family", choices=["gpt", "bert", "both"], default="both")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a TrainConfig field (experiments); repeatable")
    args = p.parse_args(argv)
    overrides = {}
    for kv in args.set:
        k, v = kv.split("=", 1)
        overrides[k] = json.loads(v) if v[:1].isdigit() or v[:1] in "-[{" or v in ("true", "false") else v
    with tempfile.TemporaryDirectory() as d:
        corpus = protocol_corpus(Path(d) / "corpus", args.source, args.offset)
        for family in (["gpt", "bert"] if args.family == "both" else [args.family]):
            print(json.dumps({"source": args.source, "offset": args.offset,
                              **run_protocol(family, corpus, args.threads, **overrides)}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
