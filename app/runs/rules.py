"""What a training run may be given, decided before any process starts: the budget and corpus
limits, the test-only presets and the run's name. (The states, and whether the train extra is
installed, are the jobs kernel's: app/jobs/.)"""
from __future__ import annotations

import json
import logging
import subprocess
import sys
import unicodedata

from ..contract import FAMILIES, MIN_CORPUS_CHARS  # noqa: F401 - training checks the same number (both read app/contract)
from ..errors import ApiError

MIN_MINUTES, MAX_MINUTES = 0.5, 30.0
# Test-only presets (Settings.run_test_presets): a model that trains in seconds ("tiny", 40 steps
# each) or for the whole budget ("tiny-slow", to cancel or kill mid-run).
TINY = {"n_layer": 1, "n_head": 2, "n_embd": 32, "n_ff": 64, "context": 32, "batch_size": 8, "eval_batches": 2}
TEST_PRESETS = {"tiny": {**TINY, "steps": 40}, "tiny-slow": TINY}


def training_presets(repo) -> list[dict] | None:
    """The budget presets of training/presets.py, through a subprocess (no torch import here);
    None when they cannot be had (asked again next time)."""
    try:
        out = subprocess.run([sys.executable, "-m", "training.live", "--list-presets"], cwd=repo,
                             capture_output=True, text=True, timeout=60, check=True).stdout
        return json.loads(out)
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        logging.getLogger("app").warning("training presets unavailable: %s", e)
        return None


def test_presets() -> list[dict]:
    return [{"name": n, "minutes": 1.0, "test_only": True, **dict.fromkeys(FAMILIES, c)} for n, c in TEST_PRESETS.items()]


def check_corpus(text: str, max_bytes: int) -> None:
    """The app's own checks, before any process starts (the trainer checks again)."""
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if any("\ud800" <= ch <= "\udfff" for ch in text):  # "\ud800" in JSON: not a character, not UTF-8
        raise ApiError("corpus must be UTF-8 text; it holds a lone surrogate (an escaped \\ud800-\\udfff "
                       "that is half of a character)", "corpus")
    if size > max_bytes:
        raise ApiError(f"corpus is {size:,} bytes; the limit is {max_bytes:,} bytes", "corpus", status=413)
    if "\x00" in text or sum(ch < " " and ch not in "\n\t\r" for ch in text) > len(text) // 100:
        raise ApiError("corpus must be plain text; this looks binary (NUL or control characters)", "corpus")
    if "\ufffd" in text and text.count("\ufffd") > len(text) // 100:
        raise ApiError("corpus must be UTF-8 text; this holds many undecodable bytes (shown as \ufffd)", "corpus")
    n = len(text.strip())
    if n == 0:
        raise ApiError("corpus is empty; paste some text, or omit it to use the shipped Shakespeare", "corpus")
    if n < MIN_CORPUS_CHARS:
        raise ApiError(f"corpus is too short to train on: {n:,} characters; at least {MIN_CORPUS_CHARS:,} are "
                       f"needed", "corpus")


# Characters a name may not hold: controls (NUL, newlines), bidirectional overrides and isolates
# (U+202A-202E, U+2066-2069: "\u202e" would flip " · final" in the model picker), zero-width ones.
BIDI = set(map(chr, [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C]))
ZERO_WIDTH = set(map(chr, [0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x180E]))


def clean_name(name: str | None, parameter: str = "name") -> str | None:
    """A name as shown in pickers and lists (a run's `name`, a fine-tune's `task_name`): refused (422
    naming `parameter`) when it holds control, bidirectional or zero-width characters or only spaces;
    outer spaces dropped. The one rule for every name a teacher types, so that none can flip or
    break the line it is shown on."""
    if name is None:
        return None
    bad = next((ch for ch in name if ch in BIDI or ch in ZERO_WIDTH or unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp")),
               None)
    if bad is not None:
        raise ApiError(f"{parameter} must be plain text on one line; it holds U+{ord(bad):04X} "
                       f"({unicodedata.name(bad, 'a control character').lower()})", parameter)
    name = " ".join(name.split())
    if not name:
        raise ApiError(f"{parameter} must hold some letters, not only spaces (or leave it out)", parameter)
    return name
