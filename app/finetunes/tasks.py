"""The fine-tune lab's shipped tasks, read from their files: the table training/tasks/tasks.json
(name, file, description, provenance and readout of each shipped task and candidate, the one table the trainer
reads too: training/finetune/tasks.py) and each task file, parsed by the one task-file parser
(app/contract/task_format.py) with the trainer's seed, so the list is the one
`python -m training finetune --list-tasks` prints, without starting a process."""
from __future__ import annotations

import json
import logging
from pathlib import Path

from ..contract.task_format import TaskFormatError, parse_task

TASKS_DIR = Path(__file__).resolve().parents[2] / "training" / "tasks"
TABLE = "tasks.json"
log = logging.getLogger("app")


def shipped_tasks(folder: Path = TASKS_DIR) -> list[dict]:
    """One summary per shipped task (name, kind, labels, n_train, n_test, description, provenance);
    a task whose file is missing or broken is left out, with a warning."""
    try:
        table = json.loads((folder / TABLE).read_text(encoding="utf-8"))["shipped"]
    except (OSError, ValueError, KeyError) as e:
        log.warning("fine-tune tasks unavailable: %s", e)
        return []
    out = []
    for name, entry in table.items():
        try:
            task = parse_task((folder / entry["file"]).read_bytes(), name, 0)
        except (OSError, KeyError, TaskFormatError) as e:
            log.warning("fine-tune task %s unavailable: %s", name, e)
            continue
        task.meta = {"description": entry["description"], "provenance": entry["provenance"],
                     **({"readout": entry["readout"]} if "readout" in entry else {})}
        out.append(task.summary())
    return out
