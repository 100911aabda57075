"""When the fine-tune lab may compare two arms (issue 42 must 2), and what it says when it may not.

The minimum. A comparison of two arms is made only when the test part of the task can carry one:
    whole-input task      at least MIN_TEST_TEXTS (20) held-out texts;
    per-character task    at least MIN_RARE (10) held-out characters carrying a rarer tag (every tag
                          but the most common one in training: the ones F1 scores), in at least
                          MIN_TOKEN_TEXTS (5) held-out texts.
Below it no arm is compared with another (no difference, no interval of one, no correction, no
"survives the correction"): the lab says each arm's score and answers (the readout's too, where it ran), in words.
A class hand-off of 6 labelled lines has 2 test texts: its arms all "give the same answer to every
text", and two such arms differ by the same amount on every seed, an interval of zero width that
says nothing; that is why the minimum exists, and why a zero-width interval is never a claim
(training/finetune/stats.py `clear`).

The plan before Start: which sizes will be skipped (`plan_sizes`, the trainer's rule in
training/finetune/command.py, kept equal by tests/training/test_finetune_evidence.py) and whether
the test part reaches the minimum, from the same task-file parser the trainer uses. The server says
it before Start (POST /api/finetune-plan, app/finetunes/plan.py), the trainer's summary says it
after (`evidence` in training/finetune/summary.py), in the same sentences.

Plain Python only (no torch, numpy or FastAPI): app/ and training/ both import it.
"""
from __future__ import annotations

from .task_format import Task

MIN_TEST_TEXTS = 20   # whole-input: held-out texts
MIN_RARE = 10         # per-character: held-out characters of the rarer tag(s)
MIN_TOKEN_TEXTS = 5   # per-character: the texts they are in


def needed_words(kind: str) -> str:
    if kind == "sequence":
        return f"at least {MIN_TEST_TEXTS} test texts"
    return f"at least {MIN_RARE} test characters of the rarer tag, in at least {MIN_TOKEN_TEXTS} test texts"


def minimum_words(kind: str) -> str:
    return "a comparison of two arms needs " + needed_words(kind)


def _n(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def evidence(kind: str, n_test: int, rare: int | None = None) -> dict:
    """{"enough", "kind", "n_test", "rare", "minimum", "text"}: can the test part carry a comparison,
    in one sentence (the same before Start and after the run)."""
    if kind == "sequence":
        enough = n_test >= MIN_TEST_TEXTS
        part = f"The test part holds {_n(n_test, 'text')}"
    else:
        rare = int(rare or 0)
        enough = rare >= MIN_RARE and n_test >= MIN_TOKEN_TEXTS
        part = f"The test part holds {_n(n_test, 'text')} with {_n(rare, 'character')} of the rarer tag"
    if enough:
        text = (f"{part}: enough to compare two arms (that needs {needed_words(kind)}); a difference is claimed "
                "only where its interval, corrected for the comparisons made, excludes 0.")
    else:
        text = (f"{part}, too few to compare two arms (that needs {needed_words(kind)}): no difference is "
                "claimed, and what can be said is each arm's score and answers.")
    return {"enough": enough, "kind": kind, "n_test": n_test, "rare": rare if kind == "token" else None,
            "minimum": minimum_words(kind), "text": text}


def majority_index(task: Task) -> int:
    """The most common label (tag) in the training part, as the trainer picks it (training/finetune/loop.py
    TaskData: the first of task.labels with the highest count)."""
    counts = [0] * len(task.labels)
    index = {lab: i for i, lab in enumerate(task.labels)}
    for e in task.train:
        for t in ([e.label] if task.kind == "sequence" else e.tags):
            counts[index[t]] += 1
    return max(range(len(counts)), key=lambda i: counts[i])


def test_part(task: Task) -> dict:
    """{"n_train", "n_test", "rare"}: rare = held-out characters whose tag is not the most common one
    (per-character tasks; None for whole-input ones). The trainer scores a text only up to its BERT's
    context, so for texts longer than that its own count (the summary's) is the smaller one."""
    rare = None
    if task.kind == "token":
        common = task.labels[majority_index(task)]
        rare = sum(t != common for e in task.test for t in e.tags)
    return {"n_train": len(task.train), "n_test": len(task.test), "rare": rare}


def task_evidence(task: Task) -> dict:
    part = test_part(task)
    return evidence(task.kind, part["n_test"], part["rare"])


def min_size(task: Task) -> int:
    """The fewest labelled examples a size may have (training/finetune/loop.py TaskData.min_size)."""
    return 2 * len(task.labels) if task.kind == "sequence" else 2


def plan_sizes(sizes: list, n_train: int, min_size: int) -> tuple[list, list[dict]]:
    """The sizes that can run, and a sentence for each that cannot: the trainer's rule
    (training/finetune/command.py runs it) and the page's plan before Start, one owner."""
    keep, skipped = [], []
    for s in sizes:
        if s == "all":
            keep.append(s)
        elif s > n_train:
            skipped.append({"size": s, "why": f"more than the {n_train} labelled training examples there are "
                                              f"('all' runs every one of them)"})
        elif s == n_train and "all" in sizes:
            skipped.append({"size": s, "why": f"'all' is these same {n_train} labelled examples, every one of them "
                                              "used"})
        elif s < min_size:
            skipped.append({"size": s, "why": f"too few: every arm keeps some aside to check on, so a size needs "
                                              f"at least {min_size} examples"})
        else:
            keep.append(s)
    return keep, skipped


def sorted_sizes(sizes: list) -> list:
    return sorted(dict.fromkeys(sizes), key=lambda s: float("inf") if s == "all" else s)


def plan(task: Task, sizes: list) -> dict:
    """What a fine-tune of `task` at `sizes` will do before it starts: the split, the sizes kept and
    skipped (with why), and whether the test part can carry a comparison."""
    part = test_part(task)
    keep, skipped = plan_sizes(sorted_sizes(sizes), part["n_train"], min_size(task))
    return {"kind": task.kind, "labels": task.labels, **part, "sizes": keep, "skipped": skipped,
            "evidence": evidence(task.kind, part["n_test"], part["rare"])}
