"""`--device auto|cpu|cuda`: the plumbing on the CPU (always), the GPU path where CUDA exists."""
import io
import subprocess
import sys

import pytest
import torch

from training import device
from training.export.model_set import card
from training.train import TrainConfig, Trainer

HAS_CUDA = torch.cuda.is_available()


def tiny(corpus, out, **kw):
    base = dict(family="gpt", corpus=str(corpus), out=str(out), n_layer=1, n_head=2, n_embd=32, n_ff=64,
                context=32, batch_size=8, steps=6, eval_interval=100, eval_batches=2, warmup=2, lr=3e-3)
    return TrainConfig(**{**base, **kw})


def test_auto_resolves_to_what_this_machine_has():
    assert device.resolve("auto") == ("cuda" if HAS_CUDA else "cpu")
    assert device.resolve(None) == device.resolve("auto")
    assert device.resolve("cpu") == "cpu"


def test_an_unknown_device_names_the_option():
    with pytest.raises(device.DeviceError, match="--device"):
        device.resolve("tpu")


@pytest.mark.slow
@pytest.mark.skipif(HAS_CUDA, reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_a_one_line_error_naming_the_option(tiny_corpus, tmp_path):
    with pytest.raises(device.DeviceError, match="--device cuda"):
        device.resolve("cuda")
    r = subprocess.run([sys.executable, "-m", "training", "train", "gpt", "--device", "cuda", "--corpus", str(tiny_corpus),
                        "--steps", "1", "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--device" in lines[0], r.stderr
    assert not (tmp_path / "run" / "ckpt.pt").exists()


def test_batches_move_where_the_model_is_and_stay_put_on_the_cpu():
    batch = {"idx": torch.zeros(2, 3, dtype=torch.long), "note": "kept"}
    assert device.to_device(batch, "cpu") is batch
    assert device.autocast_args("cpu", "fp32")["enabled"] is False
    assert device.autocast_args("cpu", "bf16")["enabled"] is True
    assert device.autocast_args("cuda", "fp32")["enabled"] is True  # bf16 autocast on a GPU always


def test_the_checkpoint_and_the_card_say_where_it_trained(tiny_corpus, tmp_path):
    t = Trainer(tiny(tiny_corpus, tmp_path, device="auto"))
    assert t.cfg.device == device.resolve("auto")  # "auto" is resolved before training, not stored as "auto"
    t.fit(log=(log := io.StringIO()))
    assert f"on {device.describe(t.cfg.device)}" in log.getvalue().splitlines()[0]  # the run's first line
    state = torch.load(tmp_path / "ckpt.pt", weights_only=False, map_location="cpu")
    assert state["train_config"]["device"] == t.cfg.device
    c = card(state["train_config"], state["model_config"], t.model, state["step"], state["elapsed"], [], {}, {})
    assert c["training"]["device"] == t.cfg.device
    # a checkpoint from before --device trained on the CPU, and its card says so
    old = {k: v for k, v in state["train_config"].items() if k != "device"}
    assert card(old, state["model_config"], t.model, 0, 0.0, [], {}, {})["training"]["device"] == "cpu"


def test_the_precision_recorded_is_the_one_that_ran(tiny_corpus, tmp_path):
    assert device.precision_that_runs("cuda", "fp32") == "bf16"  # autocast is always on on CUDA
    assert device.precision_that_runs("cpu", "fp32") == "fp32"
    assert device.precision_that_runs("cpu", "bf16") == "bf16"
    t = Trainer(tiny(tiny_corpus, tmp_path, device="cpu", precision="fp32"))
    assert t.cfg.precision == "fp32"
    # a GPU checkpoint written before the record was fixed says fp32; its card says what ran
    gpu = {**t.cfg.__dict__, "device": "cuda", "precision": "fp32", "extra": {"device_name": "cuda (NVIDIA H200)"}}
    made = card(gpu, t.model_cfg.to_dict(), t.model, 0, 0.0, [], {}, {})["training"]
    assert made["precision"] == "bf16" and made["machine"] == "cuda (NVIDIA H200)"


def test_same_seed_same_device_same_model_on_the_cpu(tiny_corpus, tmp_path):
    a = Trainer(tiny(tiny_corpus, tmp_path / "a", device="cpu", dropout=0.1))
    a.fit(log=io.StringIO())
    b = Trainer(tiny(tiny_corpus, tmp_path / "b", device="cpu", dropout=0.1))
    b.fit(log=io.StringIO())
    for (name, p), q in zip(a.model.state_dict().items(), b.model.state_dict().values()):
        assert torch.equal(p, q), name


def test_resume_keeps_the_checkpoints_device_unless_told(tiny_corpus, tmp_path):
    Trainer(tiny(tiny_corpus, tmp_path, device="cpu")).fit(log=io.StringIO())
    assert Trainer.resume(tmp_path / "ckpt.pt", steps=8).cfg.device == "cpu"
    if not HAS_CUDA:
        with pytest.raises(device.DeviceError, match="--device"):
            Trainer.resume(tmp_path / "ckpt.pt", device="cuda")


def test_live_runs_take_the_option(tiny_corpus, tmp_path):
    from training.live import parse_args
    from training.live.settings import family_configs

    args = parse_args(["--out", str(tmp_path), "--minutes", "1", "--device", "cpu"])
    args.threads = 1
    configs = family_configs(args, ["gpt", "bert"], tiny_corpus, 20_000, tmp_path)
    assert {c.device for c in configs.values()} == {"cpu"}
    assert parse_args(["--out", str(tmp_path), "--minutes", "1"]).device == "auto"


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU (runs where one is lent)")
@pytest.mark.parametrize("family", ["gpt", "bert", "electra"])
def test_cuda_trains_and_its_checkpoint_opens_on_the_cpu(tiny_corpus, tmp_path, family):
    from training.train import load_checkpoint

    t = Trainer(tiny(tiny_corpus, tmp_path / "a", family=family, device="cuda", steps=40, eval_interval=20))
    before = t.evaluate()["loss"]
    t.fit(log=io.StringIO())
    assert next(t.model.parameters()).device.type == "cuda"
    assert t.history[-1]["val_loss"] < before - 0.2
    name, model, _, state = load_checkpoint(tmp_path / "a" / "ckpt.pt")
    assert state["train_config"]["device"] == "cuda" and next(model.parameters()).device.type == "cpu"
    assert state["train_config"]["precision"] == "bf16"  # what ran under autocast, not the fp32 default
    again = Trainer(tiny(tiny_corpus, tmp_path / "b", family=family, device="cuda", steps=40, eval_interval=20))
    again.fit(log=io.StringIO())
    for (key, p), q in zip(t.model.state_dict().items(), again.model.state_dict().values()):
        assert torch.allclose(p, q, atol=1e-5), key  # same seed, same device: the same model


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU (runs where one is lent)")
def test_cuda_cli_run_prints_its_device(tiny_corpus, tmp_path):
    r = subprocess.run([sys.executable, "-m", "training", "train", "gpt", "--corpus", str(tiny_corpus), "--steps", "5",
                        "--n-layer", "1", "--n-embd", "32", "--n-head", "2", "--context", "32", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "on cuda" in r.stderr
    assert torch.load(tmp_path / "ckpt.pt", weights_only=False, map_location="cpu")["train_config"]["device"] == "cuda"
