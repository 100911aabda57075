"""`--preset long` says how long it will take here before it starts, and asks past an hour."""
import io
import subprocess
import sys

import pytest
import torch

from training.estimate import ASK_PAST_SECONDS, check_run_length, measure_step_seconds, run_seconds, say_duration
from training.train import TrainConfig, Trainer


def tiny(corpus, out, **kw):
    base = dict(family="bert", corpus=str(corpus), out=str(out), n_layer=1, n_head=2, n_embd=32, n_ff=64,
                context=32, batch_size=8, steps=6, eval_interval=100, eval_batches=2, warmup=2, lr=3e-3,
                dropout=0.1, device="cpu")
    return TrainConfig(**{**base, **kw})


def test_measuring_leaves_the_run_exactly_as_it_would_have_been(tiny_corpus, tmp_path):
    plain = Trainer(tiny(tiny_corpus, tmp_path / "a"))
    plain.fit(log=io.StringIO())
    measured = Trainer(tiny(tiny_corpus, tmp_path / "b"))
    assert measure_step_seconds(measured) > 0
    assert all(p.grad is None for p in measured.model.parameters())
    measured.fit(log=io.StringIO())
    for (name, p), q in zip(plain.model.state_dict().items(), measured.model.state_dict().values()):
        assert torch.equal(p, q), name  # same weights, same dropout draws, same batches


def test_the_estimate_counts_the_steps_left_and_the_validations(tiny_corpus, tmp_path):
    t = Trainer(tiny(tiny_corpus, tmp_path, steps=1000, eval_interval=100, eval_batches=3))
    assert run_seconds(t, 2.0) == pytest.approx(2.0 * (1000 + 11 * 3 / 3))
    assert say_duration(30) == "30 s" and say_duration(600) == "10 min" and say_duration(16 * 3600 + 26 * 60) == "16 h 26 min"


def test_past_an_hour_it_asks_and_only_yes_or_a_y_starts_it(tiny_corpus, tmp_path):
    t = Trainer(tiny(tiny_corpus, tmp_path, steps=7000))
    slow = lambda trainer: 1.0  # noqa: E731  7,000 s: past the hour
    log = io.StringIO()
    with pytest.raises(SystemExit, match="--yes"):
        check_run_length(t, yes=False, log=log, measure=slow)
    assert "7,000 steps at 1 s a step measured here (cpu): about 1 h 57 min" in log.getvalue()
    assert check_run_length(t, yes=True, log=io.StringIO(), measure=slow) > ASK_PAST_SECONDS
    asked = []
    assert check_run_length(t, yes=False, log=io.StringIO(), measure=slow, ask=lambda q: asked.append(q) or "y")
    assert asked and "over an hour" in asked[0]
    with pytest.raises(SystemExit):
        check_run_length(t, yes=False, log=io.StringIO(), measure=slow, ask=lambda q: "")
    quick = lambda trainer: 0.01  # noqa: E731  70 s: no question
    assert check_run_length(t, yes=False, log=io.StringIO(), measure=quick, ask=lambda q: pytest.fail(q)) < 100


@pytest.mark.slow
def test_the_long_preset_on_this_cpu_refuses_without_yes_and_says_why(tiny_corpus, tmp_path):
    """The shipped size's long run on a CPU is hours: the command says so and writes nothing. (A million
    steps on the tiny corpus stands in for the shipped corpus's 7,000: the same question, in seconds.)"""
    r = subprocess.run([sys.executable, "-m", "training", "train", "gpt", "--preset", "long", "--device", "cpu",
                        "--corpus", str(tiny_corpus), "--steps", "1000000", "--threads", "1",
                        "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=600,
                       stdin=subprocess.DEVNULL)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    assert "s a step measured here (cpu): about" in r.stderr and "add --yes" in r.stderr
    assert not (tmp_path / "run" / "ckpt.pt").exists()
