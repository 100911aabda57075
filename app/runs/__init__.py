"""Pretraining runs started from the Train page, a kind of job on the jobs kernel (app/jobs/): the
spec (manager), what a run may be given (rules) and what its events mean (events)."""
from .manager import RunManager

__all__ = ["RunManager"]
