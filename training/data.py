"""Corpus loading and the three kinds of training examples:

- CLM windows for GPT (input = text[i:i+T], target = text[i+1:i+T+1]);
- BERT's MLM corruption (15 % of ordinary positions; of those 80 % [MASK], 10 % random char,
  10 % unchanged; labels -100 everywhere else; a fresh draw every batch = dynamic masking);
- NSP pairs `[CLS] A [SEP] B [SEP]`: half the time B follows A in the same document, half the time
  B comes from a different document.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .masking import mask_tokens  # noqa: F401  (re-exported: BERT's corruption)
from .tokenizer import CLS, PAD, SEP, CharTokenizer

DEFAULT_CORPUS = Path(__file__).parent / "corpus" / "shakespeare"


@dataclass
class Document:
    name: str
    text: str


def read_documents(path: str | Path) -> list[Document]:
    """A file is one document; a folder is one document per *.txt file (any UTF-8 text)."""
    path = Path(path)
    if path.is_file():
        return [Document(path.stem, path.read_text(encoding="utf-8", errors="replace"))]
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in {".txt", ".md", ""})
    docs = [Document(p.stem, p.read_text(encoding="utf-8", errors="replace")) for p in files]
    docs = [d for d in docs if d.text.strip()]
    if not docs:
        raise ValueError(f"no text files found in {path}")
    return docs


def split_into_documents(doc: Document, n: int) -> list[Document]:
    """Cut one long text into n pseudo-documents at line breaks (NSP needs several documents)."""
    lines = doc.text.splitlines(keepends=True)
    per = max(1, len(lines) // n)
    parts = ["".join(lines[i:i + per]) for i in range(0, len(lines), per)]
    return [Document(f"{doc.name}#{i}", t) for i, t in enumerate(parts) if t.strip()]


def load_corpus(path: str | Path = DEFAULT_CORPUS, holdout: float = 0.1) -> dict[str, list[Document]]:
    """Return {"train", "validation", "test"} lists of documents.

    A folder with split.json uses it (the shipped corpus holds out whole plays). Otherwise the last
    documents are held out whole; a single file is first cut into pseudo-documents."""
    path = Path(path)
    docs = read_documents(path)
    split_file = path / "split.json" if path.is_dir() else None
    if split_file is not None and split_file.exists():
        split = json.loads(split_file.read_text())
        by_name = {d.name: d for d in docs}
        return {k: [by_name[n] for n in split[k]] for k in ("train", "validation", "test")}
    if len(docs) < 4:
        docs = [part for d in docs for part in split_into_documents(d, 20)]
    n_hold = max(1, round(len(docs) * holdout))
    return {"train": docs[: -2 * n_hold], "validation": docs[-2 * n_hold: -n_hold], "test": docs[-n_hold:]}


def encode_documents(tok: CharTokenizer, docs: list[Document]) -> list[np.ndarray]:
    return [np.asarray(tok.encode(d.text), dtype=np.int64) for d in docs]


class CLMBatches:
    """Random windows from the concatenated documents (vectorised gather, no Python loop)."""

    def __init__(self, docs_ids: list[np.ndarray], context: int, seed: int):
        self.data = torch.from_numpy(np.concatenate(docs_ids))
        self.context = context
        self.gen = torch.Generator().manual_seed(seed)
        if len(self.data) <= context + 1:
            raise ValueError("corpus is shorter than one context window")

    def sample(self, batch_size: int):
        starts = torch.randint(len(self.data) - self.context - 1, (batch_size,), generator=self.gen)
        idx = starts[:, None] + torch.arange(self.context + 1)  # (B, T+1)
        window = self.data[idx]
        return window[:, :-1], window[:, 1:]

    def get_state(self):
        return self.gen.get_state()

    def set_state(self, state) -> None:
        self.gen.set_state(state)


class NSPPairs:
    """`[CLS] A [SEP] B [SEP]` examples with segment ids and an IsNext(0)/NotNext(1) label.

    A is whole lines starting at a line start (or one truncated line if it is long); B is whole
    lines from the next line start, either in the same document (IsNext) or at a random line start
    of a different document (NotNext), ending at a line's end; the rest of the row is padding."""

    def __init__(self, docs_ids: list[np.ndarray], newline_id: int | None, context: int, seed: int):
        self.docs = [d for d in docs_ids if len(d) > 8]
        if len(self.docs) < 2:
            raise ValueError("NSP needs at least two documents")
        self.context = context
        self.newline_id = newline_id
        self.rng = np.random.default_rng(seed)
        self.line_starts = []
        for d in self.docs:
            starts = np.flatnonzero(d == newline_id) + 1 if newline_id is not None else np.arange(0, len(d), 64)
            starts = np.concatenate([[0], starts[starts < len(d) - 1]])
            self.line_starts.append(starts)
        sizes = np.array([len(s) for s in self.line_starts], dtype=np.float64)
        self.doc_p = sizes / sizes.sum()

    def _span_from(self, doc: int, start: int, budget: int, whole_lines: bool):
        d = self.docs[doc]
        end = min(start + budget, len(d))
        if whole_lines:
            starts = self.line_starts[doc]
            # last line start in (start, end]: cut A there so it ends with a full line
            k = np.searchsorted(starts, end, side="right") - 1
            if starts[k] > start:
                end = starts[k]
        return d[start:end], end

    def sample_pair(self, budget_a: int, budget_b: int, is_next: bool):
        doc = self.rng.choice(len(self.docs), p=self.doc_p)
        starts = self.line_starts[doc]
        start = int(starts[self.rng.integers(len(starts))])
        a, end = self._span_from(doc, start, budget_a, whole_lines=True)
        budget_b = budget_b - len(a)
        k = np.searchsorted(starts, end, side="left")
        if is_next and k < len(starts):
            b, _ = self._span_from(doc, int(starts[k]), budget_b, whole_lines=True)
        else:
            is_next = False
            other = self.rng.integers(len(self.docs) - 1)
            other = other + 1 if other >= doc else other  # any document but this one
            ostarts = self.line_starts[other]
            b, _ = self._span_from(other, int(ostarts[self.rng.integers(len(ostarts))]), budget_b, whole_lines=True)
        # B is whole lines ending at a line's end (its last break dropped), as in the NSP quiz bank
        # (training/quiz.py): rows a person judges and rows BERT trained on are built alike.
        if len(b) > 1 and self.newline_id is not None and b[-1] == self.newline_id:
            b = b[:-1]
        return a, b, is_next

    def sample(self, batch_size: int):
        T = self.context
        ids = np.full((batch_size, T), PAD, dtype=np.int64)
        seg = np.zeros((batch_size, T), dtype=np.int64)
        labels = np.zeros(batch_size, dtype=np.int64)
        room = T - 3
        for i in range(batch_size):
            budget_a = int(self.rng.integers(room // 4, 3 * room // 4 + 1))
            a, b, is_next = self.sample_pair(budget_a, room, bool(self.rng.random() < 0.5))
            b = b[: room - len(a)]
            row = np.concatenate([[CLS], a, [SEP], b, [SEP]])
            ids[i, : len(row)] = row
            seg[i, len(a) + 2: len(row)] = 1
            labels[i] = 0 if is_next else 1
        return torch.from_numpy(ids), torch.from_numpy(seg), torch.from_numpy(labels)

    def get_state(self):
        return self.rng.bit_generator.state

    def set_state(self, state) -> None:
        self.rng.bit_generator.state = state
