"""The time a running fine-tune grid has left (issue 42 must 3), for each "result" event.

The start event's estimate (app/contract/finetune_cost.py) gives every job a predicted cost. As
results arrive, the prediction is scaled by what the finished jobs took: r = (what they took + P) /
(what they were predicted to take + P), where P, a fifth of the whole grid's predicted seconds,
keeps the first few cheap jobs from swinging it. A trained job counts its wall seconds (a worker
has a core of its own, so a machine busy with other work shows there), a cheap job its CPU seconds
(it shares the main process's core with the workers starting, which the model counts already).
What is left is the cost model's wall time of the jobs not reported yet at that scale (the cheap
ones in the main process while the workers run the trained ones, nothing started again), less what
the workers have done on the jobs in their hands (each worker takes the next trained job when one
of its own comes back: the first ones at the start), plus the exports not done yet. Plain Python:
the trainer's command (training/finetune/command.py) calls it, the tests with made-up numbers.

The time shown never climbs back by more than the noise of one step (issue 52 must 4: on a busy
machine the figure went up and down for minutes): each report lies at most NOISE above the last one
shown, NOISE being the larger of RISE_SECONDS and a RISE_SHARE of that figure (one job finishing a
little late moves the scale by about that much). A real slowdown still shows, a little at each
report, so the figure never sticks far below the truth; a figure that falls is shown as it falls.
The unsmoothed figure is kept beside it (`raw_seconds`).
"""
from __future__ import annotations

from app.contract import finetune_cost as cost

PRIOR = 0.2
RISE_SECONDS = 5.0
RISE_SHARE = 0.05


class Progress:
    def __init__(self, jobs: list[tuple], costs: list[float], step_seconds: float, *, workers: int, cores: int,
                 exports: int, gpt_texts: int, start_seconds: float, now: float):
        self.jobs = {job: c * step_seconds for job, c in zip(jobs, costs)}
        self.step, self.workers, self.cores, self.start = step_seconds, workers, cores, start_seconds
        self.exports, self.gpt_texts = exports, gpt_texts
        self.took = self.predicted = 0.0
        self.prior = PRIOR * sum(self.jobs.values())
        self.hands: dict[tuple, float] = {}  # trained jobs in a worker's hands -> when it took them
        self.shown: tuple[float, float] | None = None  # (when, seconds) of the last time left reported
        self._take(now)

    def finished(self, result: dict, now: float) -> None:
        """A result event's job is done: what it took joins the scale."""
        arm = result["arm"]
        predicted = self.jobs.pop((arm, result["size"], result["seed"]), None)
        if predicted is None:
            return
        self.took += result["seconds"] if arm in cost.TRAINED else result["cpu_seconds"]
        self.predicted += predicted
        self.hands.pop((arm, result["size"], result["seed"]), None)
        self._take(now)

    def _take(self, now: float) -> None:
        """The free workers take the next trained jobs (the workers' pool takes them in the grid's order)."""
        if self.workers < 2:
            return
        for job in self.jobs:
            if len(self.hands) >= self.workers:
                break
            if job[0] in cost.TRAINED and job not in self.hands:
                self.hands[job] = now

    def exported(self) -> None:
        self.exports = max(0, self.exports - 1)

    def scale(self) -> float:
        return (self.took + self.prior) / (self.predicted + self.prior) if self.predicted + self.prior > 0 else 1.0

    def left(self, now: float) -> dict:
        """{"seconds", "text", "scale"}: the time left, in seconds and in words."""
        r = self.scale()
        jobs = list(self.jobs)
        costs = [max(0.0, self.jobs[j] / self.step - (now - self.hands[j]) / (r * self.step)) if j in self.hands
                 else self.jobs[j] / self.step for j in jobs]
        raw = cost.wall(jobs, costs, r * self.step, self.start, self.workers, self.cores, self.exports,
                        self.gpt_texts, started=True)
        seconds = raw
        if self.shown is not None:
            last = self.shown[1]
            seconds = min(raw, last + max(RISE_SECONDS, RISE_SHARE * last))
        self.shown = (now, seconds)
        return {"seconds": round(seconds, 1), "text": cost.left_words(seconds), "scale": round(r, 3),
                "raw_seconds": round(raw, 1)}
