"""Where training runs: `--device auto|cpu|cuda`, as nanoGPT's `--device` and Lightning's accelerator.

`auto` (the default) is CUDA when PyTorch sees a GPU, else the CPU, so the Train page and the
fine-tune lab use a server's GPU without a setting. The resolved name ("cpu" or "cuda") is what a
checkpoint's train_config, a card and a run's first event record: a figure always says on what it
was measured.

On CUDA the matmuls run under bf16 autocast (weights and the optimizer stay fp32), the way GPU
language-model training is usually done; on the CPU precision stays what `--precision` says, so CPU
behaviour and figures are unchanged. Batches are drawn on the CPU (the same random stream on every
device: masking and sampling use CPU generators) and moved where the model is.
"""
from __future__ import annotations

CHOICES = ("auto", "cpu", "cuda")


class DeviceError(ValueError):
    """A device that cannot be used here; the message is one line that names --device."""


def resolve(requested: str | None) -> str:
    """"auto" / None -> "cuda" when torch.cuda.is_available(), else "cpu"; "cuda" without a GPU
    is a DeviceError."""
    import torch

    name = (requested or "auto").strip().lower()
    if name not in CHOICES:
        raise DeviceError(f"--device must be one of {', '.join(CHOICES)}, not {requested!r}")
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise DeviceError("--device cuda: PyTorch sees no CUDA GPU on this machine "
                          "(torch.cuda.is_available() is False); use --device cpu or --device auto")
    return name


def autocast_args(device: str, precision: str) -> dict:
    """Keyword arguments for torch.autocast: bf16 on CUDA always, on the CPU only with --precision bf16."""
    import torch

    return {"device_type": device, "dtype": torch.bfloat16, "enabled": autocast_on(device, precision)}


def autocast_on(device: str, precision: str) -> bool:
    return device == "cuda" or precision == "bf16"


def precision_that_runs(device: str, precision: str) -> str:
    """What a run's matmuls really use, for the checkpoint and the card: "bf16" whenever autocast is
    on (always on CUDA), else "fp32". GPU checkpoints from before this was recorded say "fp32"
    although bf16 autocast ran; the card reads them through this too."""
    return "bf16" if autocast_on(device, precision) else "fp32"


def to_device(batch: dict, device: str) -> dict:
    """A batch's tensors moved to `device` (non-blocking from the CPU); other values unchanged."""
    if device == "cpu":
        return batch
    return {k: (v.to(device, non_blocking=True) if hasattr(v, "to") else v) for k, v in batch.items()}


def describe(device: str) -> str:
    """A short human name for logs and cards: "cpu" or "cuda (NVIDIA H100 80GB HBM3)"."""
    if device != "cuda":
        return device
    import torch

    return f"cuda ({torch.cuda.get_device_name(0)})"


def on_cpu(model):
    """The model itself when it is on the CPU, else a CPU copy in eval mode: the live run's samples,
    probes and held-out evaluation feed CPU tensors, and a tiny model copies in milliseconds."""
    import copy

    if next(model.parameters()).device.type == "cpu":
        return model
    return copy.deepcopy(model).to("cpu").eval()
