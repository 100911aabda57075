"""The readout arm (issue 32): the pretrained model's own head read as the task declares, at zero
labels and with one threshold; on the tiny BERT and fixed numbers. Issue 42: any task may declare it
(a task file's first line, --readout, checked by --check-task), a whole-input task gets GPT's
likelihood only when declared, and a readout scores only the positions it declares."""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from app.contract.task_format import TaskFormatError, check_task, parse_task
from training.finetune import cli
from training.finetune.loop import TaskData
from training.finetune.readout import Readout, best_cut, char_scores, declared, why_not
from training.finetune.tasks import load_task
from training.inspect_export import model_from_onnx
from training.tokenizer import CLS, MASK, SEP, CharTokenizer

REPO = Path(__file__).resolve().parents[2]


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
    assert declared(load_task("spaces")) == {"insert": " "}
    assert declared(load_task("typos")) == {"masked": "other", "positions": "letters"}
    assert declared(load_task("capitals")) == {"masked": "upper"} and declared(load_task("backwards")) == {"gpt": "forwards"}
    assert declared(load_task("sentiment")) is None and "declares no readout" in why_not(load_task("sentiment"), True)
    upload = parse_task('{"text": "ab", "tags": "01", "split": "train"}\n{"text": "ba", "tags": "10", "split": "test"}\n')
    assert declared(upload) is None and "declares no readout" in why_not(upload, True)
    three = parse_task("".join(f'{{"text": "{c}", "label": "{c}"}}\n' for c in "abcabcabc"))
    assert "three" not in why_not(three, True) and "has 3" in why_not(three, True)
    two = parse_task("".join(f'{{"text": "{c}", "label": "{c}"}}\n' for c in "abababab"))
    assert declared(two) is None and "declares no readout" in why_not(two, True)  # issue 42: GPT only when declared


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


# ---- issue 42, must 1: a readout for any task (a task file's first line, --readout, --check-task) -------------

LINES = [("the king", "00010000"), ("a crown", "1000000"), ("the sea is", "0010001000"), ("at night", "01000000"),
         ("my lord", "0100000"), ("the ghost", "001000000"), ("a ship", "100000"), ("the war", "0010000")]


def char_file(readout: dict | str | None = None) -> str:
    """A small per-character file (tag 1: a word ends here), 6 training texts and 2 test texts."""
    head = json.dumps({"readout": readout}) + "\n" if readout is not None else ""
    return head + "".join(json.dumps({"text": t, "tags": g, "split": "test" if i in (4, 5) else "train"}) + "\n"
                          for i, (t, g) in enumerate(LINES))


def text_file(readout: dict | str | None = None, labels: str = "ab") -> str:
    head = json.dumps({"readout": readout}) + "\n" if readout is not None else ""
    return head + "".join(json.dumps({"text": f"line {i}", "label": labels[i % len(labels)]}) + "\n" for i in range(12))


def problems_of(text: str) -> list[dict]:
    with pytest.raises(TaskFormatError) as e:
        parse_task(text)
    return e.value.errors


def test_a_task_file_declares_its_readout_on_its_first_line(tmp_path):
    task = parse_task(char_file({"masked": "other", "positions": "letters"}))
    assert task.meta["readout"] == {"masked": "other", "positions": "letters"} and len(task.train) + len(task.test) == 8
    assert parse_task(char_file({"insert": " "})).meta["readout"] == {"insert": " "}
    assert parse_task(text_file({"gpt": "a"})).meta["readout"] == {"gpt": "a"}
    assert parse_task(text_file("none")).meta["readout"] == "none" and "readout" not in parse_task(text_file()).meta
    assert check_task(char_file({"masked": "upper"})) == []
    # load_task keeps it beside the file's description; a declaring file wins over nothing
    path = tmp_path / "words.jsonl"
    path.write_text(char_file({"insert": " "}), encoding="utf-8")
    loaded = load_task(str(path))
    assert declared(loaded) == {"insert": " "} and loaded.meta["description"] == "task file words.jsonl"
    assert why_not(loaded, True) is None


@pytest.mark.parametrize("readout, says", [
    ({"gpt": "a"}, "whole-input"),                           # GPT's likelihood on a per-character file
    ({"masked": "sideways"}, "\"other\" or \"upper\""),
    ({"insert": ""}, "insert"),
    ({"masked": "other", "positions": "vowels"}, "positions"),
    ({"masked": "other", "colour": "red"}, "colour"),
    ({"insert": " ", "masked": "other"}, "exactly one"),
    ("sometimes", "none"),
    (["insert"], "object"),
])
def test_a_bad_declaration_is_refused_naming_line_1(readout, says):
    errors = problems_of(char_file(readout))
    assert errors[0]["line"] == 1 and errors[0]["field"] == "readout" and says in errors[0]["message"], errors


def test_declarations_that_do_not_fit_the_task_or_sit_elsewhere_are_refused():
    assert "per-character" in problems_of(text_file({"masked": "other"}))[0]["message"]
    bad_label = problems_of(text_file({"gpt": "c"}))[0]
    assert bad_label["field"] == "readout" and "'c'" in bad_label["message"] and "a, b" in bad_label["message"]
    three = problems_of(text_file({"gpt": "a"}, "abc"))[0]
    assert "two labels" in three["message"] and "3" in three["message"]
    three_tags = "".join(json.dumps({"text": "abc", "tags": t}) + "\n" for t in ("012", "120", "201", "012"))
    assert "two tags" in problems_of(json.dumps({"readout": {"insert": " "}}) + "\n" + three_tags)[0]["message"]
    late = char_file().splitlines()
    late.insert(2, json.dumps({"readout": {"insert": " "}}))
    errors = problems_of("\n".join(late))
    assert errors[0]["line"] == 3 and errors[0]["field"] == "readout" and "first line" in errors[0]["message"]
    mixed = problems_of(json.dumps({"readout": {"insert": " "}, "text": "ab", "tags": "01"}) + "\n" + char_file())
    assert mixed[0]["line"] == 1 and "only" in mixed[0]["message"]


def test_the_shipped_table_speaks_the_same_vocabulary():
    from app.contract.readouts import fit_problem
    from training.finetune.tasks import CANDIDATES, SHIPPED

    for name in (*SHIPPED, *CANDIDATES):
        task = load_task(name)
        if "readout" in task.meta:
            assert fit_problem(task.meta["readout"], task.kind, task.labels) is None, name


def test_a_whole_input_task_gets_gpts_likelihood_only_when_declared():
    """Issue 42 must 4: no default GPT read for an undeclared two-label task (sentiment got 43.3 % as its readout)."""
    undeclared = parse_task(text_file())
    assert declared(undeclared) is None and "declares no readout" in why_not(undeclared, True)
    assert '{"gpt"' in why_not(undeclared, True)
    yes = parse_task(text_file({"gpt": "b"}))
    assert declared(yes) == {"gpt": "b"} and why_not(yes, True) is None and "no GPT" in why_not(yes, False)
    assert declared(load_task("verse")) is None and declared(load_task("spelling")) == {"gpt": "spelt right"}


def test_the_shipped_typos_task_reads_letters_only(bert, stoi, tiny_models_dir):
    """Readouts score only the positions they declare: with "positions": "letters" a space or a mark is never
    marked, and the one threshold is chosen on the letters alone."""
    assert declared(load_task("typos")) == {"masked": "other", "positions": "letters"}
    task = parse_task(char_file({"masked": "other", "positions": "letters"}), "typos")
    data = TaskData(task, stoi, bert.cfg.context)
    r = Readout(tiny_models_dir, bert, data)
    preds, info = r.zero()
    for (text, _), p, s in zip(data.test, preds, r.test):
        assert [p[i] for i, c in enumerate(text) if not c.isalpha()] == [0] * sum(not c.isalpha() for c in text)
        assert [p[i] for i, c in enumerate(text) if c.isalpha()] == [int(s[i] > info["threshold"]) for i, c in enumerate(text)
                                                                     if c.isalpha()]
    preds, info = r.run([0, 1, 2, 3])
    assert all(p[i] == 0 for (text, _), p in zip(data.test, preds) for i, c in enumerate(text) if not c.isalpha())
    every = Readout(tiny_models_dir, bert, TaskData(parse_task(char_file({"masked": "other"}), "t"), stoi, bert.cfg.context))
    assert every.zero()[0] == [[int(x > 0.99) for x in s] for s in every.test]  # no positions: every character


def run_cli(args: list[str]) -> tuple[int, list[dict]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = cli(args)
    return rc, [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]


def test_done_when_a_readout_on_any_per_character_file_from_the_command_line(tiny_models_dir, tmp_path):
    """python -m training finetune --task FILE --readout '{"masked": "other"}' --arms readout,ngram: the
    readout's zero-label and one-threshold scores on a per-character file that declares nothing (or
    something else: the command line wins)."""
    for declared_in_file in (None, {"insert": " "}):
        path = tmp_path / "words.jsonl"
        path.write_text(char_file(declared_in_file), encoding="utf-8")
        rc, events = run_cli(["--model", str(tiny_models_dir), "--task", str(path), "--readout", '{"masked": "other"}',
                              "--arms", "readout,ngram", "--sizes", "all", "--seeds", "1", "--no-gpt"])
        assert rc == 0, events[-1]
        start, summary = events[0], events[-1]
        assert start["arms"] == ["readout", "ngram"] and start["skipped"] == []
        assert "1 - p(the character there)" in start["readout"]
        readout = [e for e in events if e["event"] == "result" and e["arm"] == "readout"]
        assert [(r["size"], r["rule"]) for r in readout] == [(0, "zero labels (declared)"),
                                                             ("all", "one threshold on the labelled examples")]
        assert readout[0]["threshold"] == 0.99 and all(0 <= r["f1"] <= 1 for r in readout)
        assert set(summary["results"]["readout"]) == {"0", "all"} and set(summary["results"]) == {"readout", "ngram"}


def test_the_command_line_readout_is_checked_before_anything_runs(tiny_models_dir, tmp_path, capsys):
    path = tmp_path / "words.jsonl"
    path.write_text(char_file(), encoding="utf-8")
    for bad, says in (("{oops", "not JSON"), ('{"masked": "sideways"}', "\"other\" or \"upper\""), ("[1]", "object")):
        with pytest.raises(SystemExit) as e:
            cli(["--model", str(tiny_models_dir), "--task", str(path), "--readout", bad])
        err = capsys.readouterr().err
        assert e.value.code == 2 and "--readout" in err and says in err, err
    rc, events = run_cli(["--model", str(tiny_models_dir), "--task", str(path), "--readout", '{"gpt": "1"}'])
    assert rc == 1 and events[-1]["event"] == "error" and "--readout" in events[-1]["message"]
    assert "whole-input" in events[-1]["message"] and not [e for e in events if e["event"] == "start"]
    rc, events = run_cli(["--model", str(tiny_models_dir), "--task", str(path), "--readout", "none", "--arms", "readout,ngram",
                          "--sizes", "all", "--seeds", "1", "--no-gpt"])  # "none" switches a declared readout off
    assert rc == 0 and events[0]["skipped"][0]["arm"] == "readout"


def test_check_task_validates_the_declaration_and_says_what_it_reads(tmp_path):
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text(char_file({"masked": "other", "positions": "letters"}), encoding="utf-8")
    bad.write_text(char_file({"gpt": "1"}), encoding="utf-8")
    env = os.environ | {"PYTHONPATH": str(REPO)}
    ok = subprocess.run([sys.executable, "-m", "training", "finetune", "--check-task", str(good)], capture_output=True,
                        text=True, cwd=REPO, env=env, timeout=120)
    assert ok.returncode == 0 and json.loads(ok.stdout) == []
    assert "readout (declared on its first line)" in ok.stderr and "letters only" in ok.stderr, ok.stderr
    no = subprocess.run([sys.executable, "-m", "training", "finetune", "--check-task", str(bad)], capture_output=True,
                        text=True, cwd=REPO, env=env, timeout=120)
    problems = json.loads(no.stdout)
    assert no.returncode == 1 and problems[0]["line"] == 1 and problems[0]["field"] == "readout"
