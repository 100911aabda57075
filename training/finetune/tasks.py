"""The fine-tune lab's tasks: the shipped ones (training/tasks/*.jsonl) and task files.

Plain Python (no torch, no numpy): `python -m training finetune --list-tasks` and the server's
task checks run without them. The file format and its checks are app/contract/task_format.py.

    spelling   whole-input  is every word of this sentence spelt right, or are the letters of its
                            words jumbled? 352 sentences written for this project, every other one
                            jumbled (the labels are derived: no one labelled them by hand)
    backwards  whole-input  is this passage of Julius Caesar or The Tempest (plays never seen in
                            pretraining) written forwards or backwards?
    capitals   per-character  restore capital letters in lowercased text: tag 1 = this
                            character was a capital letter; labels come free from any text, so
                            `--task capitals --corpus PATH` builds the task from a class's corpus
    spaces     per-character  word boundaries: a passage of Julius Caesar or The Tempest with its
                            spaces removed; tag 1 = a space came after this character. It is
                            what BERT's masked-LM head already does (the readout arm reads
                            p(" ") at an inserted [MASK]): docs/finetune.md has the figures

spelling and backwards are the pretraining objective in disguise ("does this look like English
letters?"): GPT's likelihood alone, with no labels taught, separates them (the readout arm shows
it). They stay as the lab's easy, honest demonstrations of that.

"readout" (issue 32, issue 42): how the readout arm reads the pretrained model's own head for the task
(training/finetune/readout.py; the vocabulary and its checks: app/contract/readouts.py): {"insert": CHARS}
/ {"masked": "other" | "upper"} (+ "positions": "letters") for BERT's masked-LM head, {"gpt": LABEL}
for a whole text (LABEL = what the likelier texts are), "none" for no readout. A task file may declare
its own on its first line ({"readout": {...}}), which wins over this table's entry for that file;
`--readout JSON` wins over both. A task with no declaration has no readout: no per-character read,
and no GPT likelihood for a whole-input task (it means nothing for most questions).

CANDIDATES: tasks measured for where pretraining could matter beyond that (issue 26), runnable by
name (`--task spaces`), built by training/finetune/candidates.py; sentiment and plays, the lab's
first whole-input tasks, are among them. Those measured under issue 32's rules are in
models/finetune_results/ (docs/finetune.md prints them), kept whether they show a gap or not.

training/build_tasks.py writes the .jsonl files (deterministic; see training/tasks/README.md).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from app.contract.task_format import Task, TaskFormatError, parse_task

TASKS_DIR = Path(__file__).parents[1] / "tasks"

# The table of shipped tasks and candidates (file, description, provenance, readout): tasks/tasks.json,
# the one table the app reads too (app/finetunes/tasks.py lists the shipped ones without a process).
_TABLE = json.loads((TASKS_DIR / "tasks.json").read_text(encoding="utf-8"))
SHIPPED: dict[str, dict] = _TABLE["shipped"]
CANDIDATES: dict[str, dict] = _TABLE["candidates"]  # measured, runnable by name, not on the page's list

CAPITALS_CHUNK = (40, 100)  # a passage: whole lines joined until at least 40 characters, at most 100
CAPITALS_TRAIN, CAPITALS_TEST = 300, 100
TRAIN_SHARE = 0.7


# The shipped plays the task builders read (training/build_tasks.py, training/finetune/candidates.py).
CORPUS = Path(__file__).parents[1] / "corpus" / "shakespeare"
PLAYS = {"julius_caesar": "Julius Caesar", "tempest": "The Tempest"}

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


def _passages(lines: list[str], low: int, high: int) -> list[str]:
    """Consecutive non-empty lines joined with a space into passages of low..high characters."""
    out, cur = [], ""
    for line in lines:
        line = " ".join(line.split())
        if not line:
            if len(cur) >= low:
                out.append(cur)
            cur = ""
            continue
        joined = f"{cur} {line}" if cur else line
        if len(joined) > high:
            if len(cur) >= low:
                out.append(cur)
            cur = line if len(line) <= high else ""
        else:
            cur = joined
        if len(cur) >= low:
            out.append(cur)
            cur = ""
    return out


def spread(items: list, n: int) -> list:
    """n items evenly spaced through the list (all of them if there are fewer)."""
    if len(items) <= n:
        return list(items)
    return [items[i * len(items) // n] for i in range(n)]


def capitals_lines(text: str, source: str = "") -> list[dict]:
    """The capitals task of any text: passages from the first 70 % train, the last 30 % test."""
    passages = [p for p in _passages(text.splitlines(), *CAPITALS_CHUNK) if any(c.isalpha() for c in p)]
    cut = int(len(passages) * TRAIN_SHARE)
    rows = []
    for split, part, n in (("train", passages[:cut], CAPITALS_TRAIN), ("test", passages[cut:], CAPITALS_TEST)):
        for p in spread(part, n):
            tags = "".join("1" if c != c.lower() else "0" for c in p)
            rows.append({"text": p.lower(), "tags": tags, "split": split} | ({"source": source} if source else {}))
    return rows


def read_corpus_text(path: Path) -> str:
    """A text file, or a folder's .txt files in name order (no torch: not training.data)."""
    path = Path(path)
    if path.is_file():
        return path.read_text(encoding="utf-8", errors="replace")
    files = sorted(p for p in path.rglob("*.txt") if p.is_file())
    if not files:
        raise FileNotFoundError(f"no .txt files in {path}")
    return "\n\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files)


def load_task(name_or_file: str, corpus: str | None = None, seed: int = 0) -> Task:
    """A shipped task by name, or a .jsonl task file. `capitals` with a corpus is built from it."""
    if name_or_file == "capitals" and corpus:
        rows = capitals_lines(read_corpus_text(Path(corpus)), Path(corpus).name)
        task = parse_task("\n".join(json.dumps(r) for r in rows), "capitals", seed)
        task.meta = {"description": SHIPPED["capitals"]["description"], "readout": SHIPPED["capitals"]["readout"],
                     "provenance": f"built from the corpus {Path(corpus).name}: lines lowercased, tags = original capitals"}
        return task
    if name_or_file in SHIPPED or name_or_file in CANDIDATES:
        entry = SHIPPED.get(name_or_file) or CANDIDATES[name_or_file]
        task = parse_task((TASKS_DIR / entry["file"]).read_bytes(), name_or_file, seed)
        own = task.meta  # a declaration on the file's first line wins over the table's
        task.meta = {"description": entry["description"], "provenance": entry["provenance"]}
        if "readout" in own or "readout" in entry:
            task.meta["readout"] = own.get("readout", entry.get("readout"))
        return task
    path = Path(name_or_file)
    if not path.is_file():
        raise FileNotFoundError(f"--task: {name_or_file!r} is neither a shipped task ({', '.join(SHIPPED)}) nor a file")
    task = parse_task(path.read_bytes(), path.stem, seed)
    task.meta = {"description": f"task file {path.name}", "provenance": "uploaded / given on the command line",
                 **task.meta}  # its readout, when its first line declares one
    return task


def list_tasks() -> list[dict]:
    return [load_task(name).summary() for name in SHIPPED]


__all__ = ["CANDIDATES", "SHIPPED", "TaskFormatError", "capitals_lines", "list_tasks", "load_task", "read_corpus_text", "spread"]
