"""The jobs kernel: what a pretraining run (app/runs/) and a fine-tune (app/finetunes/) share, once.

    lifecycle.py  the states (ACTIVE, TERMINAL), the training slot, the record, settling, signals
    liveness.py   is a job's trainer alive (its lock), which process is it
    kernel.py     `Jobs`: starting, listing, cancelling, deleting, serving model sets; a kind of job
                  is a spec on it (command, events, result)
    watch.py      the one watcher (events folded as they arrive) and the verdict that ends a job
    eventlog.py   a job's event file read as it grows, once per worker
    stream.py     the one server-sent-events tail, and the shutdown hook that ends the streams
    store.py      records written aside and renamed, full disks, what clients may see
"""
from .kernel import TRAIN_MISSING, Jobs, rescan, training_available
from .lifecycle import ACTIVE, TERMINAL
from .store import public
from .stream import EventStream, install_stop_hook

__all__ = ["ACTIVE", "TERMINAL", "TRAIN_MISSING", "EventStream", "Jobs", "install_stop_hook", "public", "rescan",
           "training_available"]
