"""No claim without the data to carry it (issue 42 must 2): the stated minimum of the test part
(app/contract/finetune_evidence.py), enforced where the summary's headline and the card's are made;
below it the words say each arm's score and answers, and nothing is compared; an interval of zero
width is never a claim; the plan before Start skips the sizes the trainer skips, in its words."""
from __future__ import annotations

import json

import numpy as np
import pytest

from app.contract.finetune_evidence import MIN_RARE, MIN_TEST_TEXTS, evidence, plan, plan_sizes
from app.contract.task_format import parse_task
from training.finetune import report
from training.finetune import stats
from training.finetune.stats import clear, units
from training.finetune.summary import summarize


def seq_units(right: list[int]) -> np.ndarray:
    return units([0 if r else 1 for r in right], [0] * len(right), "sequence", 0)


def result(arm, size, seed, u, same=False):
    return {"arm": arm, "size": size, "seed": seed, "same_answer": same, "steps": 10}, u


def six_line_class() -> str:
    """The issue's reproduction: a class session's 6 pooled labels (3 of each), no split given."""
    lines = ["What a lovely day", "I lost my keys again", "The cake was wonderful", "It rained all week",
             "A fine walk by the sea", "The bus never came"]
    return "".join(json.dumps({"text": t, "label": "happy" if i % 2 == 0 else "sad"}) + "\n" for i, t in enumerate(lines))


def test_the_six_line_class_hand_off_compares_nothing():
    """4 training and 2 test texts; every arm answers the same to both (50 %), the readout 0 %: the issue's
    headline said '1 survives the correction ... +50.0 to +50.0'. Now: no comparison, each arm's score said."""
    half, none = seq_units([1, 0]), seq_units([0, 0])
    outcomes = []
    for s in range(5):
        outcomes += [result("readout", "all", s, none, same=True), result("full", "all", s, half, same=True),
                     result("probe", "all", s, half, same=True), result("scratch", "all", s, half, same=True),
                     result("ngram", "all", s, half, same=True)]
    out = summarize(outcomes, ["readout", "full", "probe", "scratch", "ngram"], ["all"], "accuracy",
                    {"label": "happy", "score": 0.5})
    head = out["headline"]
    assert out["evidence"]["enough"] is False and out["evidence"]["n_test"] == 2
    assert "survive" not in head["text"] and head["comparisons"] == [] and head["m"] == 0
    assert "+50.0" not in head["text"] and "corrected" not in head["text"]
    assert head["text"].startswith("The test part holds 2 texts, too few to compare two arms "
                                   f"(that needs at least {MIN_TEST_TEXTS} test texts): no difference is claimed")
    for words in ("With all the labelled examples: the readout (one threshold) 0.0\u00a0%, LP-FT (the pretrained model "
                  "fine-tuned) 50.0\u00a0%, the linear probe 50.0\u00a0%",
                  "Every arm gave the same answer to every text, in every seed.",
                  "On the 2 test texts, no arm's accuracy was above always answering “happy” (50.0\u00a0%)."):
        assert words in head["text"], (words, head["text"])
    # the page sets the sizes' scores below the lead (evidence and yardstick), in plain weight
    assert head["lead"].endswith("(50.0\u00a0%).") and head["details"].startswith("With all the labelled examples:")
    assert head["text"] == head["lead"] + " " + head["details"]
    # the differences stay numbers (uncorrected), claimed nowhere
    assert all("corrected" not in d for by in out["differences"].values() for d in by.values())


def test_below_the_minimum_an_arm_above_always_one_answer_gets_the_yardstick_not_the_verdict():
    """One arm scores above always answering the most common label (on 2 texts): the headline states that
    yardstick for the reader and does not say that no arm beat it."""
    both, half = seq_units([1, 1]), seq_units([1, 0])
    outcomes = [result("full", "all", s, both) for s in range(3)] + [result("ngram", "all", s, half) for s in range(3)]
    text = summarize(outcomes, ["full", "ngram"], ["all"], "accuracy", {"label": "sad", "score": 0.5})["headline"]["text"]
    assert "Accuracy on the 2 test texts, beside always answering “sad” (50.0\u00a0%)." in text and "no arm" not in text
    assert "survive" not in text


def test_enough_test_texts_still_compare_and_claim_what_survives():
    good = {s: seq_units([1] * (18 + s % 2) + [0] * (2 - s % 2)) for s in range(5)}
    bad = {s: seq_units([1] * (10 + s % 3) + [0] * (10 - s % 3)) for s in range(5)}
    outcomes = [result("full", 32, s, good[s]) for s in range(5)] + [result("scratch", 32, s, bad[s]) for s in range(5)]
    out = summarize(outcomes, ["full", "scratch"], [32], "accuracy")
    assert out["evidence"]["enough"] is True and out["evidence"]["n_test"] == 20
    assert "1 survives the correction" in out["headline"]["text"] and out["headline"]["m"] == 1


def test_an_interval_of_zero_width_is_never_a_claim():
    """Every seed the same difference (enough texts): t gives an interval of zero width; no claim, said so."""
    a = {s: seq_units([1] * 30) for s in range(5)}
    b = {s: seq_units([1] * 15 + [0] * 15) for s in range(5)}
    same = {s: seq_units([1] * 30) for s in range(5)}
    outcomes = ([result("full", 32, s, a[s], same=True) for s in range(5)]
                + [result("scratch", 32, s, b[s]) for s in range(5)]
                + [result("ngram", 32, s, same[s], same=True) for s in range(5)])
    out = summarize(outcomes, ["full", "ngram", "scratch"], [32], "accuracy")
    d = out["differences"]["scratch"]["32"]
    assert d["lo"] == d["hi"] == pytest.approx(0.5) and stats.zero_width(d) and not clear(d)
    head = out["headline"]
    assert head["comparisons"] == [] and "survive" not in head["text"].replace("none shows a difference that survives", "")
    assert "no difference measurable" in head["text"] and "LP-FT and character n-grams" in head["text"]
    assert "every seed alike" in head["text"] and "+50.0" in head["text"]
    assert not clear({"lo": 0.5, "hi": 0.5}) and clear({"lo": 0.4, "hi": 0.6})


def test_a_per_character_task_needs_ten_of_the_rarer_tag():
    # 6 test texts of 5 characters, one rare tag in each: 6 < 10
    gold = [[0, 0, 1, 0, 0]] * 6
    u = units(gold, gold, "token", 0)
    outcomes = [result("full", 4, s, u) for s in range(3)] + [result("ngram", 4, s, u) for s in range(3)]
    out = summarize(outcomes, ["full", "ngram"], [4], "f1")
    assert out["evidence"] == evidence("token", 6, 6) and out["evidence"]["rare"] == 6 and not out["evidence"]["enough"]
    assert "6 characters of the rarer tag" in out["headline"]["text"] and out["headline"]["m"] == 0
    assert "F1 of the rarer tag" in out["headline"]["text"]
    assert evidence("token", 5, MIN_RARE)["enough"] and not evidence("token", 4, 40)["enough"]


def test_the_plan_before_start_is_the_trainers_rule():
    task = parse_task(six_line_class(), "class")
    p = plan(task, [8, 32, 128, "all"])
    assert (p["n_train"], p["n_test"], p["sizes"]) == (4, 2, ["all"])
    assert [s["size"] for s in p["skipped"]] == [8, 32, 128]
    assert p["skipped"][0]["why"] == "more than the 4 labelled training examples there are ('all' runs every one of them)"
    assert p["evidence"]["enough"] is False and p["evidence"]["text"] == evidence("sequence", 2)["text"]
    keep, skipped = plan_sizes([2, 4, 6, "all"], 6, 4)  # too few, runs, the same as "all", runs
    assert keep == [4, "all"] and [s["size"] for s in skipped] == [2, 6] and "these same 6 labelled examples" in skipped[1]["why"]
    assert plan_sizes([3, 6], 27, 6)[0] == [6] and plan_sizes([1, 2, 3], 2, 2)[0] == [2]
    tags = "".join(json.dumps({"text": "ab cd ef", "tags": "00100100"}) + "\n" for _ in range(20))
    p = plan(parse_task(tags, "t"), ["all"])
    assert p["kind"] == "token" and p["n_test"] == 6 and p["rare"] == 12 and p["evidence"]["enough"]


def test_the_card_leaves_out_files_below_the_minimum():
    small = {"evidence": evidence("sequence", 2)}
    assert not report.file_enough(small, []) and report.file_enough({"evidence": evidence("sequence", 150)}, [])
    assert report.file_enough({}, [{"n_test": 150}]) and not report.file_enough({}, [{"n_test": 2}])  # files before issue 42
    card = report.build_card("models")
    assert all(report.file_enough(f["summary"], [{"n_test": MIN_TEST_TEXTS}]) for f in card["files"].values())
