import io
import json

import pytest
import torch

from training.__main__ import main as cli
from training.train import TrainConfig, Trainer


def small_config(corpus, out, family="gpt", **kw):
    base = dict(family=family, corpus=str(corpus), out=str(out), n_layer=2, n_head=2, n_embd=32, n_ff=64,
                context=32, batch_size=8, steps=40, eval_interval=20, eval_batches=2, warmup=5, lr=3e-3)
    return TrainConfig(**{**base, **kw})


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
