"""The concept check's bank teaches the ideas, not test-taking: no place in the list and no length
rank of a choice predicts the key (in the bank's order and in class sets), every wrong choice says
why it is wrong, and a class set shuffles each question's choices the same way for everyone."""
from __future__ import annotations

import math

import pytest

from app.routers.concepts import arrangement, bank


def strategies(questions: list[list[str]]) -> dict[str, list[int]]:
    """What a test-taker who ignores the question would pick: a fixed place, or a fixed length rank
    (0 = longest ... -1 = shortest, ties broken by place)."""
    n = min(len(c) for c in questions)
    picks = {f"place {p}": [p] * len(questions) for p in range(n)}
    for r in range(n):
        picks[f"length rank {r}"] = [sorted(range(len(c)), key=lambda i: (-len(c[i]), i))[r] for c in questions]
        picks[f"shortness rank {r}"] = [sorted(range(len(c)), key=lambda i: (len(c[i]), i))[r] for c in questions]
    return picks


def best_blind_score(questions: list[list[str]], keys: list[int]) -> tuple[str, int]:
    scores = {name: sum(p == k for p, k in zip(picks, keys)) for name, picks in strategies(questions).items()}
    return max(scores.items(), key=lambda kv: kv[1])


@pytest.mark.parametrize("order", [None, 0, 1, 5, 77])
def test_no_place_or_length_rank_predicts_the_key(order):
    questions, keys = [], []
    for q in bank():
        shown = arrangement(q, order)
        questions.append([q["choices"][i]["text"] for i in shown])
        keys.append(shown.index(q["answer"]))
    name, score = best_blind_score(questions, keys)
    # Four choices: chance is a quarter; a blind strategy may not beat it by more than ~2 questions.
    assert score <= math.ceil(len(keys) / 4) + 2, f"'{name}' picks the key in {score} of {len(keys)} questions"


def test_the_longest_choice_is_not_the_key_most_of_the_time():
    longest = sum(max(range(len(q["choices"])), key=lambda i: len(q["choices"][i]["text"])) == q["answer"]
                  for q in bank())
    assert longest <= len(bank()) // 3


def test_every_wrong_choice_says_why_and_new_topics_are_asked():
    for q in bank():
        for k, c in enumerate(q["choices"]):
            assert k == q["answer"] or len(c.get("why", "")) > 20, (q["id"], k)
    ids = {q["id"] for q in bank()}
    assert {"self-supervised", "pretrain-finetune", "dynamic-mask", "in-context"} <= ids


def test_class_sets_shuffle_choices_and_answers_follow_the_shown_order(client):
    q0 = bank()[0]
    shown = {o: next(q for q in client.get("/api/concepts", params={"order": o}).json()["questions"] if q["id"] == q0["id"])
             for o in range(6)}
    assert len({tuple(q["choices"]) for q in shown.values()}) > 1  # the order of choices varies by set
    for o, q in shown.items():
        assert sorted(q["choices"]) == sorted(c["text"] for c in q0["choices"])
        key = q["choices"].index(q0["choices"][q0["answer"]]["text"])
        right = client.post(f"/api/concepts/{q0['id']}/answer", json={"choice": key, "order": o}).json()
        assert right["correct"] and right["answer"] == key and right["why"] is None
        wrong_pick = (key + 1) % len(q["choices"])
        wrong = client.post(f"/api/concepts/{q0['id']}/answer", json={"choice": wrong_pick, "order": o}).json()
        bank_choice = next(c for c in q0["choices"] if c["text"] == q["choices"][wrong_pick])
        assert not wrong["correct"] and wrong["answer"] == key and wrong["why"] == bank_choice["why"]
    r = client.post(f"/api/concepts/{q0['id']}/answer", json={"choice": 0, "order": -3})
    assert r.status_code == 422 and r.json()["parameter"] == "order"
