import io
import json

import pytest
import torch

from app.contract import SPECS
from training.__main__ import main as cli
from training.train import TrainConfig, Trainer

pytestmark = pytest.mark.slow  # trains models


def small_config(corpus, out, family="gpt", **kw):
    base = dict(family=family, corpus=str(corpus), out=str(out), n_layer=2, n_head=2, n_embd=32, n_ff=64,
                context=32, batch_size=8, steps=40, eval_interval=20, eval_batches=2, warmup=5, lr=3e-3)
    return TrainConfig(**{**base, **kw})


# GPT and BERT: the two recipes measured on the short protocol (benchmarks/recipe.py), so a fall of 0.3
# nats in 60 steps is a claim about them; every family trains in tests/app/test_family_contract.py
@pytest.mark.parametrize("family", ["gpt", "bert"])
def test_short_run_lowers_validation_loss(tiny_corpus, tmp_path, family):
    trainer = Trainer(small_config(tiny_corpus, tmp_path, family, steps=60, eval_interval=30))
    before = trainer.evaluate()["loss"]
    trainer.fit(log=io.StringIO())
    assert trainer.history[-1]["val_loss"] < before - 0.3
    assert (tmp_path / "ckpt.pt").exists()


def test_bf16_compiled_bert_run_lowers_validation_loss(tiny_corpus, tmp_path):
    # The benchmark's fastest setting must train as well, not only run fast (BERT: the compiled
    # function is the model's loss method, with the padding mask and both heads).
    trainer = Trainer(small_config(tiny_corpus, tmp_path, "bert", steps=60, eval_interval=30,
                                   precision="bf16", compile=True))
    before = trainer.evaluate()["loss"]
    trainer.fit(log=io.StringIO())
    assert trainer.history[-1]["val_loss"] < before - 0.3


def test_same_seed_same_model(tiny_corpus, tmp_path):
    a = Trainer(small_config(tiny_corpus, tmp_path / "a", steps=8))
    a.fit(log=io.StringIO())
    b = Trainer(small_config(tiny_corpus, tmp_path / "b", steps=8))
    b.fit(log=io.StringIO())
    for (name, p), q in zip(a.model.state_dict().items(), b.model.state_dict().values()):
        assert torch.equal(p, q), name


def test_interrupt_then_resume_equals_uninterrupted(tiny_corpus, tmp_path):
    straight = Trainer(small_config(tiny_corpus, tmp_path / "s", family="bert", steps=12, eval_interval=100))
    straight.fit(log=io.StringIO())

    class Interrupted(Trainer):
        def batch_loss(self, source, gen):
            if self.step == 7:
                raise KeyboardInterrupt  # as if Ctrl-C arrived before step 8
            return super().batch_loss(source, gen)

    first = Interrupted(small_config(tiny_corpus, tmp_path / "r", family="bert", steps=12, eval_interval=100))
    first.fit(log=io.StringIO())
    assert first.step == 7
    resumed = Trainer.resume(tmp_path / "r" / "ckpt.pt")
    resumed.fit(log=io.StringIO())
    assert resumed.step == 12
    for (name, p), q in zip(straight.model.state_dict().items(), resumed.model.state_dict().values()):
        assert torch.allclose(p, q, atol=1e-6), name


def test_cli_train_then_evaluate_prints_json(tiny_corpus, tmp_path, capsys):
    out = tmp_path / "run"
    cli(["train", "gpt", "--corpus", str(tiny_corpus), "--out", str(out), "--n-layer", "1", "--n-embd", "32",
         "--n-head", "2", "--n-ff", "64", "--context", "32", "--batch-size", "4", "--steps", "5", "--eval-interval", "5",
         "--eval-batches", "1"])
    capsys.readouterr()
    cli(["evaluate", str(out / "ckpt.pt"), "--split", "validation"])
    result = json.loads(capsys.readouterr().out)
    assert result["family"] == "gpt"
    assert 0 < result["nats_per_char"] < 10 and result["perplexity"] > 1 and result["chars_scored"] > 100


# GPT and BERT: the families whose measured recipes choose between the two optimizers (AdamW and Muon)
@pytest.mark.parametrize("family", ["gpt", "bert"])
def test_muon_path_lowers_validation_loss(tiny_corpus, tmp_path, family):
    trainer = Trainer(small_config(tiny_corpus, tmp_path, family, steps=60, eval_interval=30,
                                   optimizer="muon", schedule="wsd", lr=1e-2))
    assert any(isinstance(o, torch.optim.Muon) for o in trainer.optimizer.optimizers)
    before = trainer.evaluate()["loss"]
    trainer.fit(log=io.StringIO())
    assert trainer.history[-1]["val_loss"] < before - 0.3


def test_same_seed_same_model_with_muon_and_wsd(tiny_corpus, tmp_path):
    runs = []
    for name in ("a", "b"):
        t = Trainer(small_config(tiny_corpus, tmp_path / name, steps=8, optimizer="muon", schedule="wsd"))
        t.fit(log=io.StringIO())
        runs.append(t.model.state_dict())
    for (name, p), q in zip(runs[0].items(), runs[1].values()):
        assert torch.equal(p, q), name


def test_muon_resume_equals_uninterrupted(tiny_corpus, tmp_path):
    kw = dict(family="gpt", steps=10, eval_interval=100, optimizer="muon", schedule="wsd")
    straight = Trainer(small_config(tiny_corpus, tmp_path / "s", **kw))
    straight.fit(log=io.StringIO())

    class Interrupted(Trainer):
        def batch_loss(self, source, gen):
            if self.step == 6:
                raise KeyboardInterrupt
            return super().batch_loss(source, gen)

    Interrupted(small_config(tiny_corpus, tmp_path / "r", **kw)).fit(log=io.StringIO())
    resumed = Trainer.resume(tmp_path / "r" / "ckpt.pt")  # Muon's momentum comes back too
    resumed.fit(log=io.StringIO())
    assert resumed.step == 10
    for (name, p), q in zip(straight.model.state_dict().items(), resumed.model.state_dict().values()):
        assert torch.allclose(p, q, atol=1e-6), name


def test_wsd_holds_the_peak_then_decays_to_the_floor():
    from training.optim import lr_multiplier

    f = [lr_multiplier("wsd", s, s / 100, warmup=10, min_ratio=0.0, decay_frac=0.3) for s in range(101)]
    assert f[0] == pytest.approx(0.1) and f[9] == 1.0
    assert all(v == 1.0 for v in f[10:71]) and f[85] == pytest.approx(0.5) and f[100] == 0.0
    assert all(a >= b for a, b in zip(f[70:], f[71:]))


def test_fit_reports_steps_and_evals_to_on_event(tiny_corpus, tmp_path):
    events = []
    log = io.StringIO()
    trainer = Trainer(small_config(tiny_corpus, tmp_path, steps=20, eval_interval=10))
    trainer.fit(log=log, on_event=events.append)
    steps = [e for e in events if e["kind"] == "step"]
    evals = [e for e in events if e["kind"] == "eval"]
    assert [e["step"] for e in steps] == [10, 20] and [e["step"] for e in evals] == [10, 20]
    for e in events:
        assert e["train_loss"] > 0 and e["tokens_per_s"] > 0 and e["elapsed_s"] > 0 and 0 < e["progress"] <= 1
    assert evals[-1]["progress"] == 1.0 and "val_loss" in evals[-1]
    assert "step 20" in log.getvalue() and "tok/s" in log.getvalue()  # the progress bar went to log


@pytest.mark.parametrize("family", list(SPECS))
def test_lr_and_warmup_left_out_take_the_familys_defaults(tiny_corpus, tmp_path, family):
    from training.families import family as family_entry

    cfg = TrainConfig(family=family, corpus=str(tiny_corpus), out=str(tmp_path), n_layer=1, n_head=2, n_embd=32,
                      n_ff=64, context=32, steps=5)
    assert (cfg.lr, cfg.warmup, cfg.optimizer, cfg.schedule) == (0.0, -1, "", "wsd")
    trainer = Trainer(cfg)
    for key in ("lr", "warmup", "optimizer", "dropout"):
        assert getattr(trainer.cfg, key) == family_entry(family).defaults[key], key
    assert isinstance(trainer.optimizer, torch.optim.AdamW) == (trainer.cfg.optimizer == "adamw")
