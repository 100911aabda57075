"""Fine-tune task files (app/contract/task_format.py): every malformed case names its line and field."""
from __future__ import annotations

import json

import pytest

from app.contract.task_format import MAX_BYTES, MAX_LABELS, TaskFormatError, check_task, parse_task


def jl(*rows) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


GOOD = [{"text": f"good day {i}", "label": "positive"} for i in range(6)] + \
       [{"text": f"bad day {i}", "label": "negative"} for i in range(6)]


def only_error(text) -> dict:
    with pytest.raises(TaskFormatError) as e:
        parse_task(text)
    return e.value.errors[0]


def test_a_whole_input_task_parses_with_a_seeded_stratified_split():
    task = parse_task(jl(*GOOD))
    assert task.kind == "sequence" and task.labels == ["negative", "positive"]
    assert len(task.train) + len(task.test) == 12
    assert sorted(e.label for e in task.test) == ["negative", "negative", "positive", "positive"]
    again = parse_task(jl(*GOOD))
    assert [e.text for e in again.test] == [e.text for e in task.test]  # the same seed, the same split


def test_a_split_field_is_kept():
    rows = [r | {"split": "test" if i < 2 else "train"} for i, r in enumerate(GOOD)]
    task = parse_task(jl(*rows))
    assert [e.text for e in task.test] == ["good day 0", "good day 1"]


def test_a_per_character_task_takes_its_labels_from_the_tags():
    task = parse_task(jl({"text": "to be", "tags": "10000"}, {"text": "or not", "tags": "100200"},
                         {"text": "i am", "tags": "1000", "split": "test"}))
    assert task.kind == "token" and task.labels == ["0", "1", "2"]


@pytest.mark.parametrize("line, field, words", [
    ("{not json", None, "not valid JSON"),
    ('["a list"]', None, "JSON object"),
    ({"label": "positive"}, "text", "missing"),
    ({"text": "   ", "label": "positive"}, "text", "empty"),
    ({"text": 5, "label": "positive"}, "text", "string"),
    ({"text": "x" * 2001, "label": "positive"}, "text", "at most"),
    ({"text": "hello"}, "label", "missing"),
    ({"text": "hello", "label": ""}, "label", "non-empty"),
    ({"text": "hello", "label": "a", "tags": "00000"}, "label", "exactly one"),
    ({"text": "hello", "tags": "000"}, "tags", "has 3 tag characters but text has 5"),
    ({"text": "hello", "label": "positive", "split": "dev"}, "split", "train"),
    ({"text": "hello", "lable": "positive"}, "lable", "unknown field"),
])
def test_a_malformed_line_is_named_with_its_field(line, field, words):
    err = only_error(jl(*GOOD[:3], line, *GOOD[3:]))
    assert err["line"] == 4 and err["field"] == field and words in err["message"]


def test_errors_are_all_listed_and_the_exception_says_where():
    with pytest.raises(TaskFormatError) as e:
        parse_task(jl({"text": "a"}, "oops", *GOOD))
    assert [(p["line"], p["field"]) for p in e.value.errors] == [(1, "label"), (2, None)]
    assert str(e.value).startswith("line 1, field 'label': missing") and "1 more" in str(e.value)


def test_one_label_only():
    err = only_error(jl(*[r for r in GOOD if r["label"] == "positive"]))
    assert err["field"] == "label" and "only one label" in err["message"]


def test_more_than_twenty_labels():
    err = only_error(jl(*[{"text": f"t{i}", "label": f"L{i}"} for i in range(MAX_LABELS + 1)]))
    assert err["field"] == "label" and "at most 20" in err["message"]


def test_mixed_kinds():
    err = only_error(jl(*GOOD[:2], {"text": "ab", "tags": "01"}))
    assert err["line"] == 3 and err["field"] == "tags" and "one kind" in err["message"]


def test_over_the_size_cap():
    big = jl(*GOOD) + jl({"text": "y" * 1900, "label": "positive"}) * (MAX_BYTES // 1900 + 1)
    err = only_error(big.encode())
    assert err["line"] is None and "bytes" in err["message"]


def test_empty_file_and_no_test_examples():
    assert only_error("\n\n")["field"] == "text"
    err = only_error(jl(*[r | {"split": "train"} for r in GOOD]))
    assert err["field"] == "split" and "no test examples" in err["message"]


def test_not_utf8_names_the_line():
    err = only_error(jl(*GOOD[:2]).encode() + b'{"text": "\xff", "label": "x"}\n')
    assert err["line"] == 3 and "UTF-8" in err["message"]


def test_check_task_returns_the_problems():
    assert check_task(jl(*GOOD)) == []
    assert check_task("nope")[0]["line"] == 1
