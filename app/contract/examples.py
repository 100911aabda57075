"""A model set's own example lines (examples.json): a few readable lines of the held-out part of
the text it was trained on, so the applets' default prompt, sentence and examples come from that
text and not from Shakespeare. The trainer writes the file into every set of a run; the app
reads it (bounded) and, for a run folder without one, makes it from the run's corpus/ folder.

    examples.json  {"source": str, "lines": [str, ...], "prompt": str, "sentence": str, "mask": [int, ...]}

Standard library only (the contract rule)."""
from __future__ import annotations

import json
from pathlib import Path

EXAMPLES_FILE = "examples.json"
N_LINES = 5
MIN_CHARS, MAX_CHARS = 20, 80
MAX_FILE_BYTES = 16_000
SOURCE = "held-out (validation) part of the text this model set was trained on"


def readable(line: str, max_chars: int) -> bool:
    letters = sum(ch.isalpha() for ch in line)
    lower = sum(ch.islower() for ch in line)  # a sentence, not a title or a name in capitals
    return MIN_CHARS <= len(line) <= max_chars and letters >= len(line) // 2 and lower >= 2 * letters // 3 and " " in line


def mask_word(sentence: str) -> list[int]:
    """The letters (at most 3) of the word nearest the middle of the sentence: a fair first blank."""
    words, start = [], None
    for i, ch in enumerate(sentence + " "):
        if ch.isalpha() and start is None:
            start = i
        elif not ch.isalpha() and start is not None:
            words.append((start, i))
            start = None
    if not words:
        return [len(sentence) // 2]
    middle = len(sentence) / 2
    a, b = min(words, key=lambda w: (abs((w[0] + w[1]) / 2 - middle), w[0]))
    return list(range(a, min(b, a + 3)))


def prompt_of(line: str) -> str:
    """The first words of a line (about a third of it, at least 8 characters), ending with a space."""
    words, out = line.split(" "), ""
    for w in words[:-1]:
        out += w + " "
        if len(out) >= max(8, len(line) // 3):
            break
    return out or line[: max(8, len(line) // 3)]


def make_examples(text: str, max_chars: int = MAX_CHARS, n: int = N_LINES) -> dict | None:
    """Up to n distinct readable lines spread over `text` (held-out text); the first of them with
    30 characters or more gives GPT's prompt (its first words) and is Mask-Fill's sentence (blank:
    mask_word). None: no such line."""
    max_chars = max(MIN_CHARS, min(max_chars, MAX_CHARS))
    seen, found = set(), []
    for raw in text.split("\n"):
        line = " ".join(raw.split())
        if len(line) > max_chars:  # a long line: its first words that fit
            line = line[: max_chars + 1].rsplit(" ", 1)[0].rstrip(" ,;:")
        if readable(line, max_chars) and line not in seen:
            seen.add(line)
            found.append(line)
    if not found:
        return None
    step = max(1, len(found) // n)
    lines = found[::step][:n]
    main = next((line for line in lines if len(line) >= 30), lines[0])
    return {"source": SOURCE, "lines": lines, "prompt": prompt_of(main), "sentence": main, "mask": mask_word(main)}


def check_examples(data) -> dict | None:
    """The file's content if it has the shape above (strings, bounded), else None."""
    if not isinstance(data, dict):
        return None
    lines = data.get("lines")
    if not (isinstance(lines, list) and lines and all(isinstance(s, str) and 0 < len(s) <= 200 for s in lines[:20])):
        return None
    out = {"source": str(data.get("source") or SOURCE)[:200], "lines": lines[:20]}
    for key in ("prompt", "sentence"):
        value = data.get(key)
        out[key] = value[:200] if isinstance(value, str) and value else lines[0][:200]
    mask = data.get("mask")
    ok = isinstance(mask, list) and all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(out["sentence"])
                                        for i in mask)
    out["mask"] = mask[:20] if ok else mask_word(out["sentence"])
    return out


def read_examples(folder: Path) -> dict | None:
    """examples.json of a set folder (None when missing, too big or malformed)."""
    path = Path(folder) / EXAMPLES_FILE
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        return check_examples(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def examples_from_corpus(folder: Path, max_chars: int = MAX_CHARS) -> dict | None:
    """For a run folder's corpus/ (part-NN.txt and split.json, training/live/corpus.py): the
    examples of its validation parts. None when the folder has no such split."""
    folder = Path(folder)
    try:
        split = json.loads((folder / "split.json").read_text(encoding="utf-8"))
        names = [n for n in split.get("validation", []) if isinstance(n, str) and "/" not in n and ".." not in n]
        text = "\n".join((folder / f"{n}.txt").read_text(encoding="utf-8")[:200_000] for n in names)
    except (OSError, ValueError, AttributeError):
        return None
    return make_examples(text, max_chars)
