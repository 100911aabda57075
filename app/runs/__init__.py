"""Training runs started from the browser: the manager (subprocess, status, model sets), what a
run may be given (rules), its files (store), its trainer's liveness (a lock, never a PID alone),
the watcher and verdicts (watch), and the event stream (events)."""
from .manager import RunManager

__all__ = ["RunManager"]
