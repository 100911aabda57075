import io
from dataclasses import fields

import pytest
import torch

from app.contract import SPECS
from training.__main__ import main as cli
from training.presets import PRESETS, RECIPE, preset_config, preset_names, with_preset
from training.train import TrainConfig, Trainer

CONFIG_FIELDS = {f.name for f in fields(TrainConfig)}


def test_one_three_and_ten_minute_presets_exist():
    assert {"1min", "3min", "10min"} <= set(preset_names())
    assert [PRESETS[n]["minutes"] for n in ("1min", "3min", "10min")] == [1.0, 3.0, 10.0]


@pytest.mark.parametrize("family", list(SPECS))
@pytest.mark.parametrize("name", ["1min", "3min", "10min"])
def test_each_preset_is_a_valid_config_that_ends_on_the_clock(name, family):
    cfg = preset_config(name, family, corpus_chars=4_000_000)
    assert set(cfg) <= CONFIG_FIELDS
    TrainConfig(**cfg)
    assert cfg["minutes"] == PRESETS[name]["minutes"] and cfg["steps"] >= 10**6
    assert cfg["n_embd"] % cfg["n_head"] == 0
    for key in ("n_layer", "n_embd", "batch_size", "lr", "warmup", "schedule", "optimizer"):
        assert key in cfg


def test_bigger_budgets_buy_models_at_least_as_big():
    size = [preset_config(n, "gpt")["n_embd"] * preset_config(n, "gpt")["n_layer"] for n in ("1min", "3min", "10min")]
    assert size == sorted(size) and size[0] < size[-1]


def test_minutes_pick_the_nearest_preset_and_keep_the_budget():
    cfg = preset_config(2.5, "gpt")
    assert cfg["n_embd"] == PRESETS["3min"]["n_embd"] and cfg["minutes"] == 2.5
    assert preset_config("7", "bert")["n_embd"] == PRESETS["10min"]["n_embd"]


@pytest.mark.parametrize("bad", ["huge", 0, -1.0])
def test_unknown_preset_or_budget_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="preset|minutes"):
        preset_config(bad, "gpt")


def test_small_corpus_gets_a_smaller_context_and_a_tiny_one_a_clear_error():
    assert preset_config("10min", "gpt", corpus_chars=3_000)["context"] < PRESETS["10min"]["context"]
    assert preset_config("10min", "gpt", corpus_chars=2_000)["context"] >= 16
    with pytest.raises(ValueError, match="characters"):
        preset_config("1min", "gpt", corpus_chars=200)


@pytest.mark.slow
@pytest.mark.parametrize("family", list(SPECS))
def test_preset_trains_on_a_corpus_smaller_than_its_context_budget(tmp_path, family):
    # ~1,300 characters in 5 'documents': the preset must shrink to fit and train, not crash.
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(5):
        (corpus / f"d{i}.txt").write_text("".join(f"line {j} of doc {i}\n" for j in range(26)))
    chars = sum(len(p.read_text()) for p in corpus.iterdir())
    cfg = preset_config("1min", family, chars)
    trainer = Trainer(TrainConfig(**{**cfg, "family": family, "corpus": str(corpus), "out": str(tmp_path / "run"),
                                     "steps": 6, "eval_interval": 3, "eval_batches": 1}))
    trainer.fit(log=io.StringIO())
    assert trainer.step == 6 and torch.isfinite(torch.tensor(trainer.history[-1]["val_loss"]))


def test_with_preset_flags_given_win_and_size_flags_replace_the_preset_size():
    base = {"family": "gpt", "minutes": 1.0}
    cfg = with_preset({**base, "lr": 1e-4})
    assert cfg["lr"] == 1e-4 and cfg["n_embd"] == PRESETS["1min"]["n_embd"] and cfg["optimizer"] == RECIPE["optimizer"]
    cfg = with_preset({**base, "n_embd": 48, "n_head": 3})
    assert cfg["n_embd"] == 48 and cfg["n_head"] == 3 and "n_layer" not in cfg and cfg["schedule"] == "wsd"
    assert with_preset({**base, "steps": 100}) == {**base, "steps": 100}  # a step budget: no preset
    assert with_preset({"family": "gpt", "steps": 100}, "3min")["n_embd"] == PRESETS["3min"]["n_embd"]


@pytest.mark.slow
def test_cli_minutes_alone_trains_with_the_preset(tiny_corpus, tmp_path):
    out = tmp_path / "run"
    cli(["train", "gpt", "--corpus", str(tiny_corpus), "--out", str(out), "--minutes", "0.01", "--threads", "1"])
    state = torch.load(out / "ckpt.pt", weights_only=False)
    preset = preset_config(0.01, "gpt", sum(p.stat().st_size for p in tiny_corpus.iterdir()))
    assert state["model_config"]["n_embd"] == preset["n_embd"]
    assert state["train_config"]["optimizer"] == preset["optimizer"] and state["train_config"]["minutes"] == 0.01
    assert state["step"] > 0


@pytest.mark.slow
def test_cli_size_flags_win_over_the_preset(tiny_corpus, tmp_path):
    out = tmp_path / "run"
    cli(["train", "bert", "--corpus", str(tiny_corpus), "--out", str(out), "--minutes", "0.01", "--n-layer", "1",
         "--n-embd", "32", "--n-head", "2", "--n-ff", "64", "--context", "32", "--threads", "1"])
    state = torch.load(out / "ckpt.pt", weights_only=False)
    assert (state["model_config"]["n_layer"], state["model_config"]["n_embd"]) == (1, 32)
    assert state["train_config"]["schedule"] == PRESETS["1min"].get("schedule", "wsd")


def test_a_corpus_of_one_line_is_a_clear_error(tmp_path):
    one = tmp_path / "one.txt"
    one.write_text("a short text without line breaks. " * 70)  # 2,380 characters: above the minimum, one line
    with pytest.raises(ValueError, match="too little text"):
        Trainer(TrainConfig(**{**preset_config("1min", "gpt", 2380), "corpus": str(one), "out": str(tmp_path / "r")}))


def test_the_long_run_is_step_bounded_with_dropout_and_stays_off_the_train_page():
    from training.presets import preset_config, preset_names, with_preset

    assert "long" in preset_names(long=True) and "long" not in preset_names()  # the Train page lists budgets only
    gpt = with_preset({"family": "gpt"}, "long")
    bert = preset_config("long", "bert")
    assert gpt["minutes"] == 0 and gpt["steps"] >= 5000  # the same run on any machine, ended by steps
    assert gpt["dropout"] > 0 and gpt["context"] == 256 and gpt["batch_size"] == 128
    assert bert["optimizer"] == "muon" and bert["context"] == 128
    # issue 39's measured ceiling: GPT decays to zero (WSD), BERT trains without dropout
    assert (gpt["schedule"], gpt["min_lr_ratio"]) == ("wsd", 0.0)
    assert bert["dropout"] == 0.0 and (bert["schedule"], bert["min_lr_ratio"]) == ("cosine", 0.1)
    assert with_preset({"family": "gpt", "dropout": 0.0}, "long")["dropout"] == 0.0  # a flag given wins
