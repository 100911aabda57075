"""The fine-tune lab, one package: what a pretrained model knows with no labels (readout), then
what a few labels add (LP-FT, linear probe, from scratch) against class-balanced n-grams, with
seed-level intervals. Its public entry is `python -m training finetune` (command.py: cli).

    tasks       the task files (training/tasks/) and their format
    readout     the pretrained model's own head read as a task declares; gpt: GPT's likelihood
    model       the backbone + a named head;  loop: the trained arms' loop;  lpft: LP-FT
    linear      the probe and the n-gram baseline;  stats: intervals, corrections, scores
    runner      one task x sizes x seeds x arms;  pool: workers;  summary: the summary event
    export      a fine-tuned classifier as ONNX;  candidates: candidate tasks;  report: the lab's figures
Imports run one way: command -> runner -> arms (readout, lpft, loop, linear) -> model, stats, tasks.
"""
from .command import cli  # noqa: F401
