"""Join codes and nicknames: what a class types and reads aloud.

A join code is 6 characters from an alphabet without look-alikes or sound-alikes (no 0/O, 1/I/L,
2/Z, 5/S, 8/B, U/V): 23**6 = 148 million codes, shown as "KMT-4HX". Typing is forgiving:
case, spaces and dashes are ignored.

A nickname is 1-24 characters of plain text after trimming; markup characters and control
characters are refused, not escaped away, so what the projector shows is what the student typed."""
from __future__ import annotations

import secrets
import unicodedata

from ..errors import ApiError

ALPHABET = "ACDEFGHJKMNPQRTWXY34679"
CODE_LENGTH = 6
NICKNAME_MAX = 24
MARKUP = set("<>&\"'`{}\\")


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def normalize_code(raw: str) -> str:
    """The stored form of a typed code; 404 naming `code` when it cannot be one."""
    code = "".join(ch for ch in raw.upper() if ch not in " -")
    if len(code) != CODE_LENGTH or any(ch not in ALPHABET for ch in code):
        raise ApiError(f"no class session has the code {raw[:20]!r}: a code is {CODE_LENGTH} letters and digits "
                       "(as shown on the projector)", "code", status=404)
    return code


def display_code(code: str) -> str:
    return f"{code[:3]}-{code[3:]}"


def clean_nickname(raw: str) -> tuple[str, str]:
    """(the nickname as shown, the key that must be unique in the session); 422 naming `nickname`."""
    name = " ".join(unicodedata.normalize("NFC", raw).split())
    if not name:
        raise ApiError("nickname must not be empty", "nickname")
    if len(name) > NICKNAME_MAX:
        raise ApiError(f"nickname must be at most {NICKNAME_MAX} characters", "nickname")
    if any(ch in MARKUP for ch in name):
        raise ApiError("nickname must be plain text: no < > & quotes, backslashes or braces", "nickname")
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn") for ch in name):
        raise ApiError("nickname must not hold control or invisible characters", "nickname")
    return name, name.casefold()
