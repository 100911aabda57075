"""Write the fine-tune lab's shipped tasks, training/tasks/*.jsonl, deterministically:

    python -m training.build_tasks          # rewrites sentiment.jsonl, plays.jsonl, capitals.jsonl

- sentiment: the sentences of tasks/sentiment.positive.txt and sentiment.negative.txt (written for
  this project); every third sentence of each list is "test".
- plays: spoken passages (speaker names, stage directions and headings dropped; consecutive lines
  of one speech joined to 40-100 characters) of Julius Caesar and The Tempest, the corpus's two
  test plays: PLAYS_TRAIN passages spread over the first 70 % of each play, PLAYS_TEST over the last 30 %.
- capitals: finetune_tasks.capitals_lines over Macbeth and Twelfth Night (the validation plays).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from app.task_format import parse_task

from .finetune_tasks import TASKS_DIR, TRAIN_SHARE, _passages, capitals_lines, spread

CORPUS = Path(__file__).parent / "corpus" / "shakespeare"
PLAYS = {"julius_caesar": "Julius Caesar", "tempest": "The Tempest"}
CAPITALS_PLAYS = ("macbeth", "twelfth_night")
PLAYS_TRAIN, PLAYS_TEST = 200, 100

SPEAKER = re.compile(r"^[A-Z][A-Z .,'&-]*\.$")  # "FIRST CITIZEN." on a line of its own


def spoken_lines(text: str) -> list[str]:
    """The play's spoken lines from its first ACT on; a speaker, direction or heading line becomes
    an empty line so that passages never run across speeches."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.strip().startswith("ACT ")), 0)
    out = []
    for line in lines[start:]:
        s = line.strip()
        if not s or SPEAKER.match(s) or s.startswith(("[", "ACT ", "SCENE ", "Scene ")) or s.isupper():
            out.append("")
        else:
            out.append(re.sub(r"\[.*?\]", "", s).strip())
    return out


def sentiment_rows() -> list[dict]:
    rows = []
    for label in ("positive", "negative"):
        sentences = [s.strip() for s in (TASKS_DIR / f"sentiment.{label}.txt").read_text(encoding="utf-8").splitlines() if s.strip()]
        rows += [{"text": s, "label": label, "split": "test" if i % 3 == 2 else "train"} for i, s in enumerate(sentences)]
    return rows


def plays_rows() -> list[dict]:
    rows = []
    for stem, label in PLAYS.items():
        passages = _passages(spoken_lines((CORPUS / f"{stem}.txt").read_text(encoding="utf-8")), 40, 100)
        cut = int(len(passages) * TRAIN_SHARE)
        rows += [{"text": p, "label": label, "split": "train", "source": stem} for p in spread(passages[:cut], PLAYS_TRAIN)]
        rows += [{"text": p, "label": label, "split": "test", "source": stem} for p in spread(passages[cut:], PLAYS_TEST)]
    return rows


def capitals_rows() -> list[dict]:
    return [r for stem in CAPITALS_PLAYS for r in capitals_lines((CORPUS / f"{stem}.txt").read_text(encoding="utf-8"), stem)]


def write(name: str, rows: list[dict]) -> dict:
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    task = parse_task(text, name)  # the shipped files pass the same checks as an upload
    path = TASKS_DIR / f"{name}.jsonl"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return task.summary()


def main() -> None:
    for name, rows in (("sentiment", sentiment_rows()), ("plays", plays_rows()), ("capitals", capitals_rows())):
        print(json.dumps(write(name, rows)))


if __name__ == "__main__":
    main()
