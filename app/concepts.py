"""The concept check's questions (app/concepts.json), read once and checked: each has an id, a
question, 2 to 10 choices and the key, and every choice that is not the key says why it is wrong.
The page (app/routers/concepts.py), the class activities (app/classes/) and the API's examples
(app/openapi.py) all read them from here."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

BANK = Path(__file__).resolve().parent / "concepts.json"


@lru_cache(maxsize=1)
def bank() -> list[dict]:
    items = json.loads(BANK.read_text(encoding="utf-8"))["questions"]
    for q in items:  # a broken bank fails at the first request, loudly, not on one question
        choices = q["choices"]
        if not (q["id"] and q["question"] and 2 <= len(choices) <= 10 and 0 <= q["answer"] < len(choices)
                and all(c["text"] and (k == q["answer"] or c.get("why")) for k, c in enumerate(choices))):
            raise ValueError(f"concepts.json: question {q.get('id')!r} is malformed (every wrong choice needs its 'why')")
    return items
