"""The readout arm (issue 32): the pretrained model's own head read as the task declares, at zero
labels and with one threshold; on the tiny BERT and fixed numbers."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from app.contract.task_format import parse_task
from training.finetune.loop import TaskData
from training.finetune.readout import Readout, best_cut, char_scores, declared, why_not
from training.finetune.tasks import load_task
from training.inspect_export import model_from_onnx
from training.tokenizer import CLS, MASK, SEP, CharTokenizer


@pytest.fixture(scope="module")
def bert(tiny_models_dir):
    return model_from_onnx(tiny_models_dir, "bert")[0].eval()


@pytest.fixture(scope="module")
def stoi(tiny_models_dir):
    return CharTokenizer.load(tiny_models_dir / "vocab.json").stoi


def test_the_best_cut_maximises_f1_or_accuracy_on_the_examples():
    s = np.array([0.9, 0.8, 0.7, 0.2, 0.1, 0.05])
    y = np.array([1, 1, 0, 1, 0, 0])
    cut = best_cut(s, y, "f1")  # marking the top 4 (F1 6/7) beats the top 2 (F1 4/5)
    assert 0.1 < cut < 0.2
    assert 0.7 < best_cut(s, y, "accuracy") < 0.8 or 0.1 < best_cut(s, y, "accuracy") < 0.2
    assert best_cut(np.array([0.3, 0.2]), np.array([0, 0]), "f1") > 0.3  # nothing to find: mark nothing


def test_shipped_tasks_declare_their_readout_and_files_may_not():
    assert declared(load_task("spaces")) == {"insert": " "} and declared(load_task("typos")) == {"masked": "other"}
    assert declared(load_task("capitals")) == {"masked": "upper"} and declared(load_task("backwards")) == {"gpt": "forwards"}
    assert declared(load_task("sentiment")) is None and "declares no readout" in why_not(load_task("sentiment"), True)
    upload = parse_task('{"text": "ab", "tags": "01", "split": "train"}\n{"text": "ba", "tags": "10", "split": "test"}\n')
    assert declared(upload) is None and "declares no readout" in why_not(upload, True)
    three = parse_task("".join(f'{{"text": "{c}", "label": "{c}"}}\n' for c in "abcabcabc"))
    assert "three" not in why_not(three, True) and "has 3" in why_not(three, True)
    two = parse_task("".join(f'{{"text": "{c}", "label": "{c}"}}\n' for c in "abababab"))
    assert declared(two) == {} and why_not(two, True) is None and "no GPT" in why_not(two, False)


def test_the_insert_reading_is_p_of_the_character_at_an_inserted_mask(bert, stoi):
    text = "tohe ornot"  # characters of the tiny corpus
    got = char_scores(bert, stoi, text, {"insert": " "}, 100)
    assert got.shape == (len(text),) and np.all((got >= 0) & (got <= 1))
    ids = [stoi[c] for c in text]
    i = 3  # after "tobe"
    row = torch.tensor([[CLS] + ids[:i + 1] + [MASK] + ids[i + 1:] + [SEP]])
    with torch.no_grad():
        logits, _ = bert(row, torch.zeros_like(row))
    assert got[i] == pytest.approx(float(torch.softmax(logits[0, i + 2], -1)[stoi[" "]]), abs=1e-5)
    other = char_scores(bert, stoi, text, {"masked": "other"}, 100)
    assert np.all((other >= 0) & (other <= 1)) and len(char_scores(bert, stoi, text, {"insert": " "}, 4)) == 4
    upper = char_scores(bert, stoi, "a, e", {"masked": "upper"}, 100)
    assert upper[1] == 0.0 and upper[2] == 0.0 and 0 <= upper[0] <= 1  # not a letter: 0


def test_zero_labels_and_one_threshold_on_a_per_character_task(bert, stoi, tiny_models_dir):
    rows = [f'{{"text": "{t}", "tags": "{g}", "split": "{sp}"}}\n' for t, g, sp in
            [("the king", "00010000", "train"), ("a crown", "1000000", "train"), ("the sea is", "0010001000", "train"),
             ("at night", "01000000", "train"), ("my lord", "0100000", "test"), ("the ghost", "001000000", "test")]]
    task = parse_task("".join(rows), "words")
    task.meta = {"readout": {"insert": " "}}
    data = TaskData(task, stoi, bert.cfg.context)
    r = Readout(tiny_models_dir, bert, data)
    preds, info = r.zero()
    assert info["threshold"] == 0.5 and [len(p) for p in preds] == [7, 9]
    assert preds == [[1 if s > 0.5 else 0 for s in t] for t in r.test]
    preds, info = r.run([0, 1, 2])
    assert info["rule"] == "one threshold on the labelled examples" and [len(p) for p in preds] == [7, 9]
    assert preds == [[1 if s > info["threshold"] else 0 for s in t] for t in r.test]
