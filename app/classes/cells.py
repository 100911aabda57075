"""CSV cells that a spreadsheet reads as text, never as a formula (OWASP's CSV injection advice):

- a cell starting with = + - @, a tab or a carriage return gets a leading ' (the spreadsheet shows
  the text as typed, minus that mark, and evaluates nothing);
- control characters (NUL, ESC, line breaks, the C1 range) are written as visible \\xNN escapes,
  so that no cell carries a raw terminal or line control into the file.
The csv module then quotes any cell holding a comma or a quote."""
from __future__ import annotations

import unicodedata

FORMULA = ("=", "+", "-", "@", "\t", "\r")


def neutral(value):
    """A cell as written to an exported CSV (strings only; numbers and booleans as they are)."""
    if not isinstance(value, str):
        return value
    if value.startswith(FORMULA):
        value = "'" + value
    return "".join(f"\\x{ord(ch):02x}" if unicodedata.category(ch) == "Cc" else ch for ch in value)
