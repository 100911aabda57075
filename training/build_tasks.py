"""Write the fine-tune lab's shipped tasks, training/tasks/*.jsonl, deterministically:

    python -m training.build_tasks          # rewrites every .jsonl in training/tasks/

Shipped (the page's list; the claim is measured on the two whole-input ones):
- spelling: the sentences of tasks/sentiment.positive.txt and sentiment.negative.txt (written for
  this project), every other one with the letters of each word of 3+ letters jumbled (a seeded
  shuffle, each word's capitals kept where they were); the split is sentiment's.
- backwards: spoken passages of 30-60 characters of Julius Caesar and The Tempest (the corpus's
  test plays), every other one written backwards (its characters in reverse order):
  BACKWARDS_TRAIN per play spread over the first 70 % of each play, BACKWARDS_TEST over the last 30 %.
- capitals: finetune_tasks.capitals_lines over Macbeth and Twelfth Night (the validation plays).

Candidates (runnable by name, measured in models/finetune.card.json; see training/tasks/README.md),
among them the lab's first two whole-input tasks; the new ones are written by
training/finetune/candidates.py:
- sentiment: the sentences of tasks/sentiment.positive.txt and sentiment.negative.txt (written for
  this project); every third sentence of each list is "test".
- plays: spoken passages (speaker names, stage directions and headings dropped; consecutive lines
  of one speech joined to 40-100 characters) of Julius Caesar and The Tempest, the corpus's two
  test plays: PLAYS_TRAIN passages spread over the first 70 % of each play, PLAYS_TEST over the last 30 %.
"""
from __future__ import annotations

import json
import random
import re
from pathlib import Path

from app.contract.task_format import parse_task

from .finetune.tasks import CORPUS, PLAYS, TASKS_DIR, TRAIN_SHARE, _passages, capitals_lines, spoken_lines, spread

CAPITALS_PLAYS = ("macbeth", "twelfth_night")
PLAYS_TRAIN, PLAYS_TEST = 200, 100
BACKWARDS_TRAIN, BACKWARDS_TEST = 150, 60
WORD = re.compile(r"[A-Za-z]{3,}")


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


def jumble(word: str, rng: random.Random) -> str:
    """The word's letters in a seeded new order (different from the word when they can be); the
    capitals stay at the positions they had, so only the order of the letters tells."""
    letters = list(word.lower())
    for _ in range(10):
        rng.shuffle(letters)
        if "".join(letters) != word.lower():
            break
    return "".join(c.upper() if o.isupper() else c for c, o in zip(letters, word))


def alternate(texts: list[str], labels: tuple[str, str], change, split: str, extra: dict | None = None) -> list[dict]:
    """Every other text (the 2nd, 4th, ...) changed and labelled labels[1]; the rest kept as labels[0]."""
    return [{"text": change(t, i) if i % 2 else t, "label": labels[i % 2], "split": split} | (extra or {})
            for i, t in enumerate(texts)]


def spelling_rows() -> list[dict]:
    rows, seen = [], {"train": 0, "test": 0}
    for r in sentiment_rows():
        rng = random.Random(f"spelling {r['text']}")
        jumbled = seen[r["split"]] % 2 == 1  # every other sentence of each split
        seen[r["split"]] += 1
        text = WORD.sub(lambda m: jumble(m.group(0), rng), r["text"]) if jumbled else r["text"]
        rows.append({"text": text, "label": "jumbled" if jumbled else "spelt right", "split": r["split"]})
    return rows


def backwards_rows() -> list[dict]:
    rows = []
    for stem in PLAYS:
        passages = _passages(spoken_lines((CORPUS / f"{stem}.txt").read_text(encoding="utf-8")), 30, 60)
        cut = int(len(passages) * TRAIN_SHARE)
        for split, part, n in (("train", passages[:cut], BACKWARDS_TRAIN), ("test", passages[cut:], BACKWARDS_TEST)):
            rows += alternate(spread(part, n), ("forwards", "backwards"), lambda t, i: t[::-1], split, {"source": stem})
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


TASK_ROWS = {"spelling": spelling_rows, "backwards": backwards_rows, "capitals": capitals_rows,
             "sentiment": sentiment_rows, "plays": plays_rows}


def all_rows() -> dict:
    """Every task file's rows: the shipped tasks and the candidates (training/finetune/candidates.py)."""
    from .finetune.candidates import CANDIDATES as MADE

    return TASK_ROWS | MADE


def main() -> None:
    for name, rows in all_rows().items():
        print(json.dumps(write(name, rows())))


if __name__ == "__main__":
    main()
