"""The torch side of `python -m training live` (see training/live/__init__.py for the protocol).

The families train in the one training loop (training/train.py train_loop) on one clock, and this
run is its callback: progress, evaluations, samples, snapshots, stop. The budget is wall-clock
time for the whole run (evaluations and samples included), so a 3-minute run ends after about 3
minutes whatever it trains; each Trainer's schedule follows that clock.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import torch

from app.contract import CHECKPOINTS_DIR, EXAMPLES_FILE, FINAL_DIR, SNAPSHOTS_DIR, make_examples

from ..data import load_corpus
from ..device import on_cpu
from ..export.model_set import SetWriter, card
from ..families import family
from ..model import count_parameters
from ..tokenizer import UNK
from ..train import Callback, Trainer, train_loop
from .corpus import describe, fast_tokenizer, probe_line, vocabulary_chars
from .settings import PROGRESS_EVERY_S, SAMPLE_EVERY_S, SNAPSHOT_FRACTIONS, Stop, command_lines, family_configs
from .views import fill_positions

EVAL_POINTS = 30  # validation points per curve over the budget (at least EVAL_MIN_S apart)
EVAL_MIN_S = 5.0
HELD_OUT_SHARE = 0.25  # of package's evaluation size (GPT 100,000 characters, BERT 500 pairs)


class LiveRun(Callback):
    def __init__(self, args, families, corpus_path: Path, desc: dict, run_dir: Path, events, stop, state):
        self.args, self.families, self.run_dir, self.events, self.stop, self.state = args, families, run_dir, events, stop, state
        torch.set_num_threads(args.threads)
        splits = load_corpus(corpus_path)
        if not splits["train"] or not splits["validation"] or not splits["test"]:
            raise ValueError("the corpus needs training and held-out documents")
        train_text = "".join(d.text for d in splits["train"])
        self.tok = fast_tokenizer(*vocabulary_chars(train_text))
        held = min(sum(len(d.text) for d in splits[k]) for k in ("validation", "test"))
        self.configs = family_configs(args, families, corpus_path, len(train_text), run_dir)
        for c in self.configs.values():
            # A short corpus: the context must fit in each held-out part (evaluation windows).
            if c.context + 2 > held:
                c.context = max(8, min(c.context, held - 2) // 8 * 8)
        self.trainers = {f: Trainer(c, self.tok) for f, c in self.configs.items()}
        unknown = int((self.tok.encode(train_text) == UNK).sum())
        self.corpus = {**describe(splits, desc), "vocab_size": self.tok.vocab_size,
                       "unknown_chars": unknown, "path": str(corpus_path)}
        held_text = "\n".join(d.text for d in splits["validation"])
        self.probe = args.probe or probe_line(held_text)
        bidirectional = [c.context for f, c in self.configs.items() if family(f).attention == "bidirectional"]
        if bidirectional:  # [CLS] probe [SEP] fits the context
            self.probe = self.probe[: min(bidirectional) - 2]
        self.prompt = args.prompt if args.prompt is not None else self.probe[: max(8, len(self.probe) // 3)]
        self.positions = fill_positions(self.probe)
        # the applets' default prompt, sentence and examples for this run's sets (app/contract/examples.py)
        self.examples = make_examples(held_text, min(bidirectional) - 2 if bidirectional else 80)
        self.measures = {f: m for f, c in self.configs.items()
                         if (m := family(f).live_measure(self.tok, splits["validation"], c)) is not None}
        self.test_docs = splits["test"]
        self.budget_s = min(c.minutes * 60 for c in self.configs.values()) or float("inf")
        self.commands = command_lines(args, self.configs, run_dir)
        self.curves = {f: [] for f in families}
        self.snapshots: list[dict] = []
        self.writer = SetWriter({f: t.model_cfg for f, t in self.trainers.items()}, self.tok.to_json(),
                                args.threads, self._landed, self._failed,
                                Path(args.export_cache) if args.export_cache else run_dir / ".traced")
        self.writer.start()
        self.final_landed = None
        events.emit("models", corpus=self.corpus, commands=self.commands, budget_s=self.budget_s,
                    device=next(iter(self.trainers.values())).cfg.device,  # what "auto" in `start` became
                    models={f: {"parameters": count_parameters(t.model), "config": t.model_cfg.to_dict(),
                                "train": {k: getattr(t.cfg, k) for k in ("batch_size", "lr", "warmup", "steps", "minutes", "eval_batches")}}
                            for f, t in self.trainers.items()},
                    prompt=self.prompt, probe=self.probe, fill_positions=self.positions)

    # --- the loop ------------------------------------------------------------------------------

    def progress(self) -> float:
        return min(t.progress() for t in self.trainers.values())

    def train(self) -> None:
        self.state["interruptible"] = False  # from here the loop polls self.stop between steps
        if self.stop.is_set():
            raise Stop()
        t0 = time.monotonic()
        self.clock = lambda: time.monotonic() - t0
        train_loop(self.trainers, [self], clock=self.clock)

    def on_start(self, trainers) -> None:
        self.window = {f: {"loss": [], "tokens": 0, "since": 0.0} for f in self.families}
        self.eval_every = max(EVAL_MIN_S, self.budget_s / EVAL_POINTS) if math.isfinite(self.budget_s) else EVAL_MIN_S
        self.next_eval, self.next_sample, self.next_progress = self.eval_every, SAMPLE_EVERY_S, 0.0  # first progress at the first step
        self.fractions = list(SNAPSHOT_FRACTIONS)
        self.evaluate_all(self.clock())
        self.check_snapshot()

    def check_snapshot(self) -> None:
        p = self.progress()
        if self.fractions and p >= self.fractions[0]:
            while self.fractions and p >= self.fractions[0]:
                self.fractions.pop(0)
            self.snapshot(p, self.clock())
            self.next_sample = self.clock() + SAMPLE_EVERY_S

    def on_step(self, name, tr, lr, parts, seconds) -> None:
        w = self.window[name]
        w["loss"].append(parts["loss"])
        w["tokens"] += tr.tokens_per_step
        now = self.clock()
        if now >= self.next_progress:
            for fam in self.families:
                if self.window[fam]["loss"]:  # a family with no step since the last line waits (no "loss –, 0 tokens/s")
                    self.emit_progress(fam, self.window[fam], now)
            self.next_progress = now + PROGRESS_EVERY_S
        if now >= self.next_eval:
            self.evaluate_all(now)
            self.next_eval = self.clock() + self.eval_every
        if now >= self.next_sample:
            self.events.emit("sample", step=self.total_steps(), steps=self.steps(), elapsed_s=round(now, 2), **self.samples())
            self.next_sample = self.clock() + SAMPLE_EVERY_S
        self.check_snapshot()
        if self.stop.is_set() and self.progress() < 1.0:
            raise Stop()

    def on_end(self, trainers) -> None:
        self.elapsed = self.clock()
        for fam in self.families:
            self.emit_progress(fam, self.window[fam], self.elapsed)
        self.evaluate_all(self.elapsed)

    def total_steps(self) -> int:
        """All families' steps added up: only a snapshot's folder name and id (step-NNNNNN) use it;
        people are shown each model's own steps (steps())."""
        return sum(t.step for t in self.trainers.values())

    def steps(self) -> dict:
        return {f: t.step for f, t in self.trainers.items()}

    def emit_progress(self, fam: str, w: dict, now: float) -> None:
        tr = self.trainers[fam]
        p = self.progress()
        remaining = max(0.0, self.budget_s - now) if math.isfinite(self.budget_s) else now * (1 - p) / max(p, 1e-9)
        if w["loss"]:
            w["held"] = (float(np.mean(w["loss"])), round(w["tokens"] / max(now - w["since"], 1e-9)))
        loss, tokens_per_s = w.get("held", (None, None))  # no step since the last line: its last values
        self.events.emit("progress", family=fam, step=tr.step, loss=loss, tokens_per_s=tokens_per_s, elapsed_s=round(now, 2),
                         remaining_s=round(remaining, 2), fraction=round(min(p, 1.0), 4), lr=tr.lr_at(tr.progress()))
        w["loss"], w["tokens"], w["since"] = [], 0, now

    def evaluate_all(self, now: float) -> None:
        for fam, tr in self.trainers.items():
            val = tr.evaluate()
            if fam in self.measures:
                val.update(self.measures[fam](on_cpu(tr.model)))
            point = {"step": tr.step, "tokens": tr.step * tr.cfg.batch_size * tr.cfg.context, "elapsed_s": round(now, 2),
                     **{f"val_{k}": v for k, v in val.items()}}
            self.curves[fam].append(point)
            self.events.emit("eval", family=fam, **point)

    def samples(self) -> dict:
        return {f: family(f).live_view()(on_cpu(t.model), self.tok, self.prompt, self.probe, self.positions)
                for f, t in self.trainers.items()}

    # --- model sets ----------------------------------------------------------------------------

    def card(self, fam: str, evaluation: dict) -> dict:
        tr = self.trainers[fam]
        c = tr.cfg
        return card(c.__dict__, tr.model_cfg.to_dict(), tr.model, tr.step, tr.elapsed, list(self.curves[fam]),
                    self.corpus, evaluation,
                    training={"live": True, "budget_minutes": c.minutes, "progress": round(min(tr.progress(), 1.0), 4)},
                    command=self.commands.get(fam))

    def quiz(self) -> dict | None:
        """An NSP quiz bank from the held-out documents, when they are long enough for one."""
        nsp = [f for f in self.trainers if family(f).uses_nsp]  # the quiz is next-sentence prediction's
        if not nsp:
            return None
        from ..quiz import build_quiz, held_out_for_quiz

        try:
            items = build_quiz(held_out_for_quiz(self.corpus["path"]), self.configs[nsp[0]].context, n_items=40)
        except ValueError:
            return None
        return {"source": "held-out part of the run's corpus", "items": items}

    def submit(self, dest: Path, fraction: float, evaluation: dict, extra: dict, final: bool = False,
               quiz: dict | None = None) -> None:
        states = {f: {k: v.detach().to("cpu", copy=True) for k, v in t.model.state_dict().items()} for f, t in self.trainers.items()}
        cards = {f: self.card(f, evaluation.get(f, {})) for f in self.trainers}
        info = {"name": dest.name, "path": str(dest.relative_to(self.run_dir)), "step": self.total_steps(),
                "steps": self.steps(), "fraction": round(min(fraction, 1.0), 4), "final": final,
                "validation_loss": {f: evaluation.get(f, {}).get("validation_loss") for f in self.trainers}}
        info["sample"] = extra  # the snapshot event carries its moment's sample (the side-by-side view)
        meta = {**info, "families": list(self.trainers)}
        files = {"snapshot.json": meta, **({EXAMPLES_FILE: self.examples} if self.examples else {}),
                 **({"nsp_quiz.json": quiz} if quiz else {})}
        self.writer.submit(dest, states, cards, files, info, first=final)

    def snapshot(self, fraction: float, now: float) -> None:
        if any(not self.curves[f] or self.curves[f][-1]["step"] != t.step for f, t in self.trainers.items()):
            self.evaluate_all(now)  # each snapshot's validation loss is its own (the best one is marked)
        sample = self.samples()
        self.events.emit("sample", step=self.total_steps(), steps=self.steps(), elapsed_s=round(now, 2), **sample)
        latest = {f: {"validation_loss": self.curves[f][-1]["val_loss"]} if self.curves[f] else {} for f in self.families}
        self.submit(self.run_dir / SNAPSHOTS_DIR / f"step-{self.total_steps():06d}", fraction, latest, sample)

    def _landed(self, dest: Path, info: dict, seconds: float) -> None:
        if info["final"]:
            self.final_landed = time.monotonic()
        self.snapshots.append(info)
        self.events.emit("snapshot", **info, export_s=round(seconds, 2))

    def _failed(self, dest: Path, info: dict, error: Exception) -> None:
        self.events.emit("snapshot_failed", **info, message=f"{type(error).__name__}: {error}")
        if info["final"]:
            self.final_error = error

    def finish(self) -> None:
        """Held-out metrics, checkpoints for the terminal, the final set (before any snapshot still
        waiting), then `finished` once every set has landed."""
        t_end = time.monotonic()
        self.state["interruptible"] = True
        if self.stop.is_set():
            raise Stop()
        self.events.emit("exporting", what="final", pending_snapshots=self.writer.pending)
        evaluation = {}
        for fam, tr in self.trainers.items():
            tr.model.eval()
            size = {k: v * HELD_OUT_SHARE for k, v in family(fam).eval_size.items()}  # seconds, not minutes
            held = family(fam).evaluator()(on_cpu(tr.model), self.tok, self.test_docs, **{k: int(v) for k, v in size.items()})
            evaluation[fam] = {"validation_loss": self.curves[fam][-1]["val_loss"],
                               "test": {"held_out": "test split of the run's corpus",
                                        "documents": [d.name for d in self.test_docs], **held}}
        self.state["interruptible"] = False
        (self.run_dir / CHECKPOINTS_DIR).mkdir(exist_ok=True)
        for fam, tr in self.trainers.items():
            tr.save(self.run_dir / CHECKPOINTS_DIR / f"{fam}.pt")
        self.final_error = None
        sample = self.samples()
        self.submit(self.run_dir / FINAL_DIR, 1.0, evaluation, sample, final=True, quiz=self.quiz())
        while not self.writer.idle.wait(0.1):
            if self.stop.is_set():
                raise Stop()
        if self.final_error is not None or self.final_landed is None:
            raise RuntimeError(f"the final model set could not be written: {self.final_error}")
        self.events.emit(
            "finished", metrics={f: e["test"] for f, e in evaluation.items()},
            validation_loss={f: e["validation_loss"] for f, e in evaluation.items()},
            steps={f: t.step for f, t in self.trainers.items()}, train_seconds=round(self.elapsed, 1),
            final=FINAL_DIR, snapshots=sorted(s["name"] for s in self.snapshots if not s["final"]),
            playable_after_s=round(self.final_landed - t_end, 2), commands=self.commands, sample=sample,
            export_timings=self.writer.timings)
