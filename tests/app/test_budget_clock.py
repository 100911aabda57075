"""The budgets' one clock (issue 53 must 9): every budget reads app.limits.clock, so a test that makes
it stand still decides how much time passes, and a slow machine cannot refill a bucket mid-test."""
from __future__ import annotations

import itertools
import time

from app.classes.codes import ALPHABET
from app.classes.guard import CODE_BURST, CODE_EVERY_S
from app.limits import PerClient
from tests.app.class_kit import browser, served, start

TOKEN = "clock-teacher-token"


def test_a_standing_clock_refills_a_bucket_only_when_the_test_advances_it(standing_clock):
    budget = PerClient(2, 1.0)
    assert [budget.take("a"), budget.take("a")] == [0, 0]
    time.sleep(1.2)  # the machine's time passes; the budget's does not
    assert budget.take("a") == 1.0
    standing_clock.advance(1.0)
    assert budget.take("a") == 0 and budget.take("a") > 0


def test_a_bucket_never_loses_tokens_when_its_clock_goes_back(standing_clock):
    budget = PerClient(3, 1.0)
    budget.take("a")
    standing_clock.advance(-100.0)  # a clock set back (or a test standing it earlier) is no time at all
    assert [budget.take("a"), budget.take("a")] == [0, 0] and budget.take("a") > 0


def test_the_servers_code_budget_runs_on_the_same_clock(tmp_path, standing_clock):
    with served(tmp_path / "data", TOKEN) as app:
        code = start(browser(app, "127.0.0.1", headers={"Authorization": f"Bearer {TOKEN}"}))
        guesser = browser(app, "127.0.0.9")
        wrong = (c for c in ("".join(p) for p in itertools.product(ALPHABET, repeat=6)) if c != code)
        assert [guesser.get(f"/api/sessions/{next(wrong)}").status_code for _ in range(CODE_BURST + 1)] \
            == [404] * CODE_BURST + [429]
        time.sleep(0.5)
        assert guesser.get(f"/api/sessions/{next(wrong)}").status_code == 429
        standing_clock.advance(CODE_EVERY_S)  # one guess refilled, and only one
        assert [guesser.get(f"/api/sessions/{next(wrong)}").status_code for _ in range(2)] == [404, 429]
