"""GPT's way: no training at all, the task framed as a continuation for the model set's gpt.onnx.

Whole-input task: the prompt is one labelled training example per label (when they fit in the
context) and then the test text, each followed by "\nAnswer: "; every label is scored as the
continuation of that prompt (mean log-probability per character of the label, so long labels are
not penalised for their length) and the best one is the answer.

Per-character capitals task (lowercased text, tags "1" = was a capital): at each letter the model
compares p(capital letter) with p(small letter) as the next character after the text so far
(a "\n" before the text: passages start at a line start). Other per-character tasks have no
continuation framing: the row says so instead of giving a number.

Runs on onnxruntime only (the same graph the app serves); one test example at a time.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from app.contract.task_format import Task

ANSWER = "\nAnswer: "


class GPTScorer:
    def __init__(self, folder: Path, threads: int = 1):
        import onnxruntime as ort

        folder = Path(folder)
        card = json.loads((folder / "gpt.card.json").read_text(encoding="utf-8"))
        self.cfg = card["config"]
        vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
        self.stoi = {c: i for i, c in enumerate(vocab["specials"] + vocab["chars"])}
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        self.sess = ort.InferenceSession(str(folder / "gpt.onnx"), opts, providers=["CPUExecutionProvider"])
        hs = self.cfg["n_embd"] // self.cfg["n_head"]
        shape = (1, self.cfg["n_head"], self.cfg["context"], hs)
        self.feeds = {"past_length": np.array(0, dtype=np.int64)}
        for i in range(self.cfg["n_layer"]):
            for kind in ("key", "value"):
                self.feeds[f"past_{kind}_{i}"] = np.zeros(shape, dtype=np.float32)

    @property
    def context(self) -> int:
        return self.cfg["context"]

    def log_probs(self, text: str) -> np.ndarray:
        """(len(text), vocab): log p(next character) after each character of text."""
        ids = np.array([[self.stoi.get(c, 1) for c in text]], dtype=np.int64)
        logits = self.sess.run(["logits"], {"input_ids": ids, **self.feeds})[0][0]
        logits = logits - logits.max(-1, keepdims=True)
        return logits - np.log(np.exp(logits).sum(-1, keepdims=True))

    def continuation_score(self, prompt: str, answer: str) -> float:
        full = (prompt + answer)[-self.context:]
        lp = self.log_probs(full)
        start = len(full) - len(answer)
        ids = [self.stoi.get(c, 1) for c in answer]
        return float(np.mean([lp[start - 1 + k, t] for k, t in enumerate(ids)]))


def demonstrations(task: Task) -> str:
    """One training example per label, in label order."""
    out = []
    for label in task.labels:
        ex = next(e for e in task.train if e.label == label)
        out.append(f"{ex.text}{ANSWER}{label}\n\n")
    return "".join(out)


def is_capitals(task: Task) -> bool:
    return task.kind == "token" and task.labels == ["0", "1"] and all(e.text == e.text.lower() for e in task.test)


def gpt_way(folder: Path, task: Task, threads: int = 1) -> dict:
    """The held-out accuracy of GPT's way on the task (or why there is none)."""
    t0 = time.time()
    folder = Path(folder)
    base = {"event": "gpt_way", "model": "gpt.onnx", "n_test": len(task.test)}
    if not (folder / "gpt.onnx").exists():
        return base | {"accuracy": None, "why": "this model set has no GPT"}
    scorer = GPTScorer(folder, threads)
    if task.kind == "sequence":
        demos = demonstrations(task)
        longest = max(len(e.text) for e in task.test) + len(ANSWER) + max(map(len, task.labels))
        if len(demos) + longest > scorer.context:
            demos = ""
        right, answers = 0, {lab: 0 for lab in task.labels}
        for e in task.test:
            prompt = f"{demos}{e.text}{ANSWER}"
            scores = [scorer.continuation_score(prompt, lab) for lab in task.labels]
            guess = task.labels[int(np.argmax(scores))]
            right += guess == e.label
            answers[guess] += 1
        counts = [sum(e.label == lab for e in task.test) for lab in task.labels]
        return base | {"accuracy": right / len(task.test), "chance": max(counts) / len(task.test), "answers": answers,
                       "same_answer": sum(v > 0 for v in answers.values()) == 1,
                       "method": ("one example per label, then the text, each followed by 'Answer: '; "
                                  if demos else "the text followed by 'Answer: '; ")
                       + "each label scored as the continuation (mean log-probability per character)",
                       "prompt_example": f"{demos}{task.test[0].text}{ANSWER}", "seconds": round(time.time() - t0, 2)}
    if not is_capitals(task):
        return base | {"accuracy": None, "why": "a per-character task has no continuation to score, except capitals"}
    right = total = zeros = tp = fp = fn = 0
    for e in task.test:
        text = e.text[: scorer.context - 1]
        lp = scorer.log_probs("\n" + text)
        for i, (c, tag) in enumerate(zip(text, e.tags)):
            up = c.upper()
            guess = "1" if up != c and up in scorer.stoi and lp[i, scorer.stoi[up]] > lp[i, scorer.stoi.get(c, 1)] else "0"
            right += guess == tag
            zeros += tag == "0"
            total += 1
            tp, fp, fn = tp + (guess == tag == "1"), fp + (guess == "1" != tag), fn + (tag == "1" != guess)
    return base | {"accuracy": right / total, "chance": zeros / total, "unit": "characters",
                   "f1": 2 * tp / max(1, 2 * tp + fp + fn), "answers": {"0": total - tp - fp, "1": tp + fp},
                   "same_answer": tp + fp == 0 or tp + fp == total,
                   "method": "at each letter, p(capital) vs p(small letter) as the next character after the text so far",
                   "seconds": round(time.time() - t0, 2)}


def text_scores(scorer: GPTScorer, texts: list[str]) -> np.ndarray:
    """Mean log-probability per character of each text (a "\\n" first; cut to the GPT's context):
    how English-like the GPT finds it (the readout arm's whole-input reading, readout.py)."""
    out = np.zeros(len(texts))
    for i, text in enumerate(texts):
        text = text[: scorer.context - 1]
        lp = scorer.log_probs("\n" + text)
        ids = [scorer.stoi.get(c, 1) for c in text]
        out[i] = float(np.mean([lp[k, t] for k, t in enumerate(ids)])) if ids else 0.0
    return out
