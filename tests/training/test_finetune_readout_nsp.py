"""BERT's next-sentence readout (issue 52): {"nsp": LABEL} for whole-input tasks whose texts are two
lines joined by "\\n"; p(IsNext) of (first line, second line) on the tiny BERT, against the quiz's own
onnxruntime score; its vocabulary checks; `follows` declares it and has a test part of 400+ pairs."""
from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from app.contract import readouts
from app.contract.task_format import TaskFormatError, parse_task
from training.finetune.loop import TaskData
from training.finetune.readout import Readout, declared, lines_of, pair_scores, why_not
from training.finetune.tasks import load_task
from training.inspect_export import model_from_onnx
from training.quiz import p_is_next
from training.tokenizer import CharTokenizer

PAIRS = [("to be or not to be", "that is the question"), ("the king is dead", "long live the king"),
         ("a horse, a horse", "my kingdom for a horse"), ("friends, romans", "lend me your ears"),
         ("the dog ran off", "blue cheese and rain"), ("now is the winter", "of our discontent"),
         ("what light breaks", "yonder window there"), ("a rose by any name", "would smell as sweet")]


def pair_file(readout=None) -> str:
    """Six labelled pairs and two test pairs; labels alternate so both are in each part."""
    head = json.dumps({"readout": readout}) + "\n" if readout is not None else ""
    return head + "".join(json.dumps({"text": f"{a}\n{b}", "label": "follows" if i % 2 == 0 else "elsewhere",
                                      "split": "test" if i >= 6 else "train"}) + "\n" for i, (a, b) in enumerate(PAIRS))


@pytest.fixture(scope="module")
def bert(tiny_models_dir):
    return model_from_onnx(tiny_models_dir, "bert")[0].eval()


@pytest.fixture(scope="module")
def tok(tiny_models_dir):
    return CharTokenizer.load(tiny_models_dir / "vocab.json")


def test_the_vocabulary_takes_nsp_for_two_label_whole_input_tasks_only():
    two = ["elsewhere", "follows"]
    assert readouts.shape_problem({"nsp": "follows"}) is None and readouts.fit_problem({"nsp": "follows"}, "sequence", two) is None
    assert "not a label" in readouts.fit_problem({"nsp": "next"}, "sequence", two)
    assert "per-character task" in readouts.fit_problem({"nsp": "1"}, "token", ["0", "1"])
    assert "BERT's next-sentence head" in readouts.fit_problem({"nsp": "1"}, "token", ["0", "1"])
    assert "has 3" in readouts.fit_problem({"nsp": "a"}, "sequence", ["a", "b", "c"])
    assert "\"nsp\" must be" in readouts.shape_problem({"nsp": ""}) and "\"nsp\" must be" in readouts.shape_problem({"nsp": 3})
    assert "positions" in readouts.shape_problem({"nsp": "a", "positions": "letters"})
    assert "exactly one" in readouts.shape_problem({"nsp": "a", "gpt": "a"})
    assert readouts.parse_json('{"nsp": "follows"}') == {"nsp": "follows"} and "nsp" in readouts.EXAMPLE
    # BERT is always there, so a model set without gpt.onnx still reads it; GPT's readout still needs a GPT
    assert readouts.why_not({"nsp": "follows"}, "sequence", two, has_gpt=False) is None
    assert "no GPT" in readouts.why_not({"gpt": "follows"}, "sequence", two, has_gpt=False)
    assert readouts.zero_label({"nsp": "follows"}, "sequence")
    words = readouts.words({"nsp": "follows"}, "sequence")
    assert "next-sentence" in words and "'follows' when p(IsNext) > 0.5" in words and "no break" in words
    assert '{"nsp": LABEL}' in readouts.why_not(None, "sequence", two, True)


def test_a_task_file_declares_it_on_its_first_line_and_a_wrong_one_names_line_1():
    assert parse_task(pair_file({"nsp": "follows"})).meta["readout"] == {"nsp": "follows"}
    with pytest.raises(TaskFormatError) as e:
        parse_task(pair_file({"nsp": "next"}))
    assert e.value.errors[0]["line"] == 1 and e.value.errors[0]["field"] == "readout" and "'next'" in str(e.value)
    tagged = json.dumps({"readout": {"nsp": "1"}}) + "\n" + "".join(
        json.dumps({"text": "ab", "tags": t}) + "\n" for t in ("01", "10", "01", "10"))
    with pytest.raises(TaskFormatError) as e:
        parse_task(tagged)
    assert e.value.errors[0]["line"] == 1 and "whole text" in e.value.errors[0]["message"]


def test_pair_scores_are_the_quizs_p_is_next_of_the_two_lines(bert, tok, tiny_models_dir):
    """The same [CLS] a [SEP] b [SEP] the server and the quiz read (training/quiz.py pair_input), batched
    with padding here, one at a time through onnxruntime there."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(tiny_models_dir / "bert.onnx"), providers=["CPUExecutionProvider"])
    texts = [f"{a}\n{b}" for a, b in PAIRS] + ["one line only", "two\nbreaks\nhere", "\n"]
    got = pair_scores(bert, tok.stoi, texts, bert.cfg.context)
    want = [p_is_next(session, tok, *lines_of(t)) for t in texts]
    assert got.shape == (len(texts),) and np.allclose(got, want, atol=1e-4), (got, want)
    assert lines_of("one line only") == ("one line only", "") and lines_of("two\nbreaks\nhere") == ("two", "breaks\nhere")
    # two different pairs get two different numbers: the score reads the text, not a constant
    assert len(set(np.round(got[:len(PAIRS)], 6))) > 1


def test_a_pair_longer_than_the_context_is_cut_not_refused(bert, tok):
    room = bert.cfg.context - 3
    long = "a" * (room + 10) + "\n" + "b" * 40
    cut = "a" * room + "\n"  # the first line fills the room: nothing of the second is left
    assert np.allclose(pair_scores(bert, tok.stoi, [long, cut], bert.cfg.context)[0],
                       pair_scores(bert, tok.stoi, [cut], bert.cfg.context)[0], atol=1e-6)


def test_zero_labels_and_one_threshold_read_the_next_sentence_head(bert, tok, tiny_models_dir):
    task = parse_task(pair_file({"nsp": "follows"}), "pairs")
    data = TaskData(task, tok.stoi, bert.cfg.context)
    r = Readout(tiny_models_dir, bert, data)
    follows = task.labels.index("follows")
    assert np.allclose(r.test, pair_scores(bert, tok.stoi, [t for t, _ in data.test], bert.cfg.context))
    preds, info = r.zero()
    assert info["threshold"] == 0.5 and preds == [follows if s > 0.5 else 1 - follows for s in r.test]
    preds, info = r.run(list(range(len(data.train))))
    assert info["above"] == "follows" and preds == [follows if s > info["threshold"] else 1 - follows for s in r.test]
    # the label a declaration names is the one above the cut: naming the other flips every zero-label answer
    flipped = Readout(tiny_models_dir, bert, TaskData(parse_task(pair_file({"nsp": "elsewhere"}), "pairs"), tok.stoi,
                                                      bert.cfg.context))
    assert flipped.zero()[0] == [1 - p for p in r.zero()[0]]


def test_a_text_without_a_line_break_is_read_not_refused(bert, tok, tiny_models_dir):
    rows = "".join(json.dumps({"text": f"line number {i}", "label": "ab"[i % 2], "split": "test" if i > 5 else "train"})
                   + "\n" for i in range(8))
    task = parse_task(json.dumps({"readout": {"nsp": "a"}}) + "\n" + rows, "lines")
    assert why_not(task, has_gpt=False) is None
    r = Readout(tiny_models_dir, bert, TaskData(task, tok.stoi, bert.cfg.context))
    assert np.allclose(r.test, pair_scores(bert, tok.stoi, ["line number 6\n", "line number 7\n"], bert.cfg.context))


def test_follows_declares_the_next_sentence_readout_and_has_400_test_pairs():
    task = load_task("follows")
    assert declared(task) == {"nsp": "follows"} and why_not(task, has_gpt=False) is None
    assert len(task.train) == 300 and len(task.test) >= 400
    counts = Counter(e.label for e in task.test)
    assert abs(counts["follows"] - counts["elsewhere"]) <= 2, counts
    assert all(e.text.count("\n") == 1 for e in task.train + task.test)


def test_an_nsp_readout_is_not_a_gpt_read_in_the_results_files():
    from training.finetune.report import reads_gpt

    assert reads_gpt(["--task", "follows", "--arms", "readout,full"]) is False
    assert reads_gpt(["--task", "backwards", "--arms", "readout,full"]) is True
    assert reads_gpt(["--task", "follows", "--arms", "readout", "--readout", '{"gpt": "follows"}']) is True
    assert reads_gpt(["--task", "backwards", "--arms", "full"]) is False


def test_the_trainer_runs_the_zero_label_rule_of_an_nsp_readout(tiny_models_dir):
    """Size 0 (no label seen) is in the trainer's grid for {"nsp": LABEL}, as for the other readouts."""
    from training.finetune.runner import Lab

    lab = Lab(tiny_models_dir, parse_task(pair_file({"nsp": "follows"}), "pairs"))
    assert lab.zero_label() and lab.skip_reason("readout") is None
    undeclared = Lab(tiny_models_dir, parse_task(pair_file(), "pairs"))
    assert not undeclared.zero_label() and "declares no readout" in undeclared.skip_reason("readout")
