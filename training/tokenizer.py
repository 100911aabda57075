"""Character-level tokenizer. The vocabulary is a small JSON file in models/ so the server can
tokenize without torch (app/ reads the same file with its own ten-line reader)."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from app.contract import CLS, MASK, PAD, SEP, SPECIALS, UNK  # noqa: F401 - one list, shared with the server (re-exported)


class CharTokenizer:
    def __init__(self, chars: list[str], counts: dict[str, int] | None = None):
        self.chars = list(chars)
        self.itos = SPECIALS + self.chars
        self.stoi = {ch: i for i, ch in enumerate(self.itos)}
        # Training-text frequencies: the unigram baseline of evaluate uses them.
        self.counts = dict(counts or {})

    @classmethod
    def from_text(cls, text: str) -> "CharTokenizer":
        counts = Counter(text)
        return cls(sorted(counts), {ch: counts[ch] for ch in sorted(counts)})

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    @property
    def first_char_id(self) -> int:
        return len(SPECIALS)

    def encode(self, text: str) -> list[int]:
        return [self.stoi.get(ch, UNK) for ch in text]

    def decode(self, ids) -> str:
        return "".join(self.itos[int(i)] for i in ids)

    def to_json(self) -> dict:
        return {"specials": SPECIALS, "chars": self.chars, "counts": self.counts}

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), ensure_ascii=False, indent=0) + "\n", encoding="utf-8")

    @classmethod
    def from_json(cls, data: dict) -> "CharTokenizer":
        if data.get("specials") != SPECIALS:
            raise ValueError("vocabulary file has unexpected special tokens")
        return cls(data["chars"], data.get("counts"))

    @classmethod
    def load(cls, path: str | Path) -> "CharTokenizer":
        return cls.from_json(json.loads(Path(path).read_text(encoding="utf-8")))
