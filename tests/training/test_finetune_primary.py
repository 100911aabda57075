"""The primary question's statistics (training/finetune/primary.py, stats.two_level / paired_t / holm) and
its plan: written down, run as planned, answered the same way whichever way it comes out."""
from __future__ import annotations

import json

import numpy as np
import pytest

from training.finetune import primary
from training.finetune.report import PLAN, PRIMARY, RESULTS, primary_answer, read
from training.finetune.stats import holm, paired_t, two_level


def units(rng, n_test: int, rate: float) -> np.ndarray:
    """Per-example counts (right, total, TP, FP, FN) of a tagger that finds `rate` of 10 tags per text."""
    tp = rng.binomial(10, rate, n_test)
    fn, fp = 10 - tp, rng.binomial(3, 0.3, n_test)
    total = np.full(n_test, 80)
    return np.stack([total - fn - fp, total, tp, fp, fn], 1)


def test_holm_steps_down_and_stops_at_the_first_kept_null():
    out = holm({"a": 0.02, "b": 0.03})
    assert out["a"] == {"level": 0.975, "rejected": True, "p_adjusted": 0.04}
    assert out["b"]["rejected"] and out["b"]["level"] == 0.95
    out = holm({"a": 0.03, "b": 0.01})  # 0.01 <= 0.025, then 0.03 <= 0.05
    assert out["b"]["rejected"] and out["a"]["rejected"]
    out = holm({"a": 0.03, "b": 0.04})  # 0.03 > 0.025: nothing further is tested
    assert not out["a"]["rejected"] and not out["b"]["rejected"]
    assert out["a"]["p_adjusted"] == pytest.approx(0.06) and out["b"]["p_adjusted"] == pytest.approx(0.06)
    assert not holm({"a": None, "b": 0.001})["a"]["rejected"]


def test_paired_t_matches_scipy():
    from scipy.stats import ttest_1samp

    d = [0.05, 0.02, 0.07, 0.01, 0.04]
    ours, ref = paired_t(d), ttest_1samp(d, 0.0)
    assert ours["t"] == pytest.approx(ref.statistic) and ours["p"] == pytest.approx(ref.pvalue) and ours["df"] == 4
    assert paired_t([0.1, 0.1])["p"] is None  # no spread: nothing measured, never a finding


def test_two_level_bootstrap_counts_the_test_sets_luck():
    """Ten seeds that agree closely on a small noisy test set: the t interval over seeds is narrow, the
    two-level one (test passages resampled too) is wider; with many passages the two come together."""
    rng = np.random.default_rng(0)
    for n_test, wider in ((30, True), (3000, False)):
        a = {s: units(rng, n_test, 0.6) for s in range(10)}
        b = {s: units(rng, n_test, 0.5) for s in range(10)}
        boot = two_level(a, b, "f1")
        assert boot["lo"] < boot["hi"] and boot["se"] > 0
        from training.finetune.stats import score, t_interval

        diffs = [score(a[s], "f1") - score(b[s], "f1") for s in range(10)]
        mean, lo, hi = t_interval(diffs)
        assert boot["lo"] < mean < boot["hi"]
        assert ((boot["hi"] - boot["lo"]) > 1.5 * (hi - lo)) is wider


def test_answer_says_a_clear_win_and_a_tie_in_the_planned_words():
    rng = np.random.default_rng(1)

    def lines(rate_full: float, rate_ngram: float) -> list[dict]:
        return [{"arm": arm, "size": 128, "seed": s, "units": units(rng, 400, rate).tolist()}
                for s in range(10) for arm, rate in (("full", rate_full), ("ngram", rate_ngram))]

    out = primary.answer({"repeats": lines(0.7, 0.5), "questions": lines(0.5, 0.5)})
    win, tie = out["cells"]
    assert win["holm"]["rejected"] and win["holm"]["level"] == 0.975
    assert "On repeats, pretraining beats counting patterns by" in out["text"]
    assert not tie["holm"]["rejected"]
    assert "On questions, at this size we cannot tell them apart" in out["text"]
    assert f"the smallest difference this lab could see is {100 * tie['smallest_seen']:.1f} points" in out["text"]
    assert 0 < tie["smallest_seen"] < 0.2


def test_the_plan_is_the_one_written_down():
    """The PLAN entries are the README's design: LP-FT and n-grams, 128 only, 10 seeds, counts kept."""
    from training.finetune.tasks import TASKS_DIR

    readme = (TASKS_DIR / "README.md").read_text(encoding="utf-8")
    assert "## The lab's one primary question" in readme and "10 seeds (0-9)" in readme
    for name in ("repeats-primary", "questions-primary"):
        args = PLAN[name]
        assert name in PRIMARY and f"`{name}`" in readme
        assert args[args.index("--arms") + 1] == "full,ngram" and args[args.index("--sizes") + 1] == "128"
        assert args[args.index("--seeds") + 1] == "10" and "--keep-units" in args


@pytest.mark.parametrize("name", sorted(PRIMARY))
def test_committed_primary_files_hold_ten_seeds_with_their_counts(name):
    path = RESULTS / f"{name}.jsonl"
    if not path.exists():
        pytest.skip(f"{name} not run yet")
    head, results, _ = read(path)
    assert "--keep-units" in head["command"]
    for arm in ("full", "ngram"):
        seeds = {r["seed"] for r in results if r["arm"] == arm and r["size"] == 128}
        assert seeds == set(range(10)), arm
    for r in results:
        u = np.asarray(r["units"])
        assert u.shape == (r["n_test"], 5) and u[:, 1].sum() > 0
    card = json.loads((RESULTS.parent / "finetune.card.json").read_text(encoding="utf-8"))
    assert card["primary"]["text"] == primary_answer()["text"]  # the card is rebuilt from these files


def test_the_page_opens_with_the_primary_answer():
    """Issue 52's done-when: the page's opening states the primary answer with its Holm-corrected and
    bootstrap intervals, or the smallest difference the lab could see: every data-primary span is the card's."""
    import re

    from training.finetune.report import REPO

    card = json.loads((REPO / "models" / "finetune.card.json").read_text(encoding="utf-8"))
    cells = {c["task"]: c for c in card["primary"]["cells"]}
    if any(c["mean"] is None for c in cells.values()):
        pytest.skip("the primary cells have not run yet")
    html = (REPO / "templates" / "finetune.html").read_text(encoding="utf-8")
    lead = html[html.index('id="ft-lead"'):html.index("</p>", html.index('id="ft-sure"'))]  # the answer and how sure
    spans = dict(re.findall(r'data-primary="(\w+\.\w+)">([^<]+)<', lead))
    for task, c in cells.items():
        ti, b = c["t_interval"], c["bootstrap"]
        assert spans[f"{task}.mean"] == f"{100 * c['mean']:+.1f}"
        assert spans[f"{task}.holm"] == f"{100 * ti['lo']:+.1f} to {100 * ti['hi']:+.1f}"
        assert spans[f"{task}.boot"] == f"{100 * b['lo']:+.1f} to {100 * b['hi']:+.1f}"
        if c["holm"]["rejected"]:
            assert f"{task}.seen" not in spans
        else:
            assert spans[f"{task}.seen"] == f"{100 * c['smallest_seen']:.1f}"
