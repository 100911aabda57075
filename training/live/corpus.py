"""The corpus of a live run: a folder as it is (the shipped plays), or one text (pasted or
uploaded) cleaned and cut into pseudo-documents with an explicit held-out split.

Pure Python (no torch), so a bad corpus is refused in a fraction of a second. The cut text is
written into the run folder (corpus/part-NN.txt + split.json), which `load_corpus` reads as it
reads the shipped corpus: the same split for training, evaluation and a terminal re-run.
"""
from __future__ import annotations

import json
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np

from app.contract import MIN_CORPUS_CHARS  # the app checks the same number before it starts a run
N_PARTS = 20  # pseudo-documents: NSP needs several, held-out = the last 2 + 2 (10 % + 10 %)
MAX_VOCAB_CHARS = 300  # the rarest characters past this become [UNK]


class CorpusError(ValueError):
    """The corpus cannot be trained on; the message says why, for the person who gave it."""


def clean_text(text: str) -> str:
    """Unix line ends; no control characters but newline and tab; no byte-order mark."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\ufeff", "")
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cs", "Co", "Cn"))


def decode(raw: bytes) -> str:
    if b"\x00" in raw:
        raise CorpusError("the corpus looks binary (it contains NUL bytes); give plain UTF-8 text")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CorpusError(f"the corpus is not valid UTF-8 text (byte {e.start})") from None


def cut_points(text: str, n: int) -> list[int]:
    """n roughly equal parts, each cut at a line break near its end (else a space, else anywhere:
    a single huge line is cut too)."""
    size = len(text) / n
    points = [0]
    for k in range(1, n):
        target = max(int(k * size), points[-1] + 1)
        window = text[target: target + max(1, int(size / 2))]
        nl = window.find("\n")
        sp = window.find(" ")
        cut = target + (nl + 1 if nl >= 0 else sp + 1 if sp >= 0 else 0)
        points.append(min(cut, len(text)))
    points.append(len(text))
    return points


def split_text(text: str, n: int = N_PARTS) -> list[str]:
    pts = cut_points(text, n)
    return [text[a:b] for a, b in zip(pts, pts[1:])]


def prepare_corpus(source: str | Path, run_dir: Path, min_chars: int = MIN_CORPUS_CHARS) -> tuple[Path, dict]:
    """(corpus path to train on, description). A folder is used as it is."""
    source = Path(source)
    if source.is_dir():
        return source, {"name": source.name, "source": "folder"}
    if not source.is_file():
        raise CorpusError(f"corpus file not found: {source}")
    text = clean_text(decode(source.read_bytes()))
    n = len(text.strip())
    if n < min_chars:
        raise CorpusError(f"the corpus is too short to train on: {n:,} characters; at least {min_chars:,} are needed")
    parts = split_text(text)
    folder = run_dir / "corpus"
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"part-{i:02d}" for i in range(len(parts))]
    for name, part in zip(names, parts):
        (folder / f"{name}.txt").write_text(part, encoding="utf-8")
    split = {"train": names[:-4], "validation": names[-4:-2], "test": names[-2:]}
    (folder / "split.json").write_text(json.dumps(split, indent=1) + "\n")
    return folder, {"name": source.stem, "source": "text"}


def describe(splits: dict, desc: dict) -> dict:
    return {**desc,
            "characters": {k: sum(len(d.text) for d in v) for k, v in splits.items()},
            "documents": {k: len(v) for k, v in splits.items()}}


def vocabulary_chars(train_text: str, limit: int = MAX_VOCAB_CHARS) -> tuple[list[str], dict[str, int]]:
    """The `limit` most frequent characters of the training text (sorted), with their counts."""
    counts = Counter(train_text)
    keep = sorted(ch for ch, _ in counts.most_common(limit))
    return keep, {ch: counts[ch] for ch in keep}


def probe_line(text: str, lo: int = 30, hi: int = 80) -> str:
    """A fixed, readable line of held-out text for the live BERT fill and GPT prompt."""
    for line in text.split("\n"):
        line = line.strip()
        if lo <= len(line) <= hi and sum(ch.isalpha() for ch in line) >= lo // 2:
            return line
    flat = " ".join(text.split())
    return flat[:hi].rsplit(" ", 1)[0] if len(flat) > hi else flat


def fast_tokenizer(chars: list[str], counts: dict[str, int]):
    """A CharTokenizer whose encode is vectorised (numpy over code points, returning an int64 array):
    the trainers encode the corpus once each, and the Python per-character loop took seconds
    on the shipped plays, before the first step."""
    from ..tokenizer import UNK, CharTokenizer

    class FastCharTokenizer(CharTokenizer):
        def __init__(self, chars, counts=None):
            super().__init__(chars, counts)
            cps = np.array([ord(ch) for ch in self.chars], dtype=np.uint32)
            order = np.argsort(cps)
            self._keys = cps[order]
            self._ids = (order + self.first_char_id).astype(np.int64)

        def encode(self, text: str) -> np.ndarray:
            cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
            if not len(self._keys):
                return np.full(len(cps), UNK, dtype=np.int64)
            at = np.searchsorted(self._keys, cps).clip(max=len(self._keys) - 1)
            return np.where(self._keys[at] == cps, self._ids[at], UNK)

    return FastCharTokenizer(chars, counts)
