"""Where the torch side of training runs: the CPU or a CUDA GPU.

The llama.cpp side (rollouts, held-out measurements) offloads to a GPU by itself; this
is the other half, the trainable model.  ``auto`` takes the first CUDA device when torch
sees one and the CPU otherwise.  The model, its adapters and the cached lower-layer
states live on that device; the option log-probabilities it returns (a few numbers per
prompt) come back to the CPU, where the losses, advantages and the CTDE critic are
computed, so no other code depends on the device.

The device changes the speed and the last bits of the arithmetic, not the run: like the
thread count it is left out of a run's id, so a run started on a GPU may resume on the
CPU and the other way round.
"""
from __future__ import annotations

from common.errors import ConfigError
from training.config import DEVICE_FORM, check_device_name

__all__ = ["DEVICE_FORM", "check_device_name", "resolve_device"]


def resolve_device(name: str) -> str:
    """The torch device to train on for ``name``; a CUDA device this machine does not
    have is refused with one line."""
    import torch

    check_device_name(name)
    if name == "cpu":
        return "cpu"
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if name == "auto":
        return "cuda:0" if count else "cpu"
    index = int(name.split(":")[1]) if ":" in name else 0
    if index >= count:
        have = f"{count} CUDA device{'s' if count != 1 else ''}" if count else "no CUDA device torch can use"
        raise ConfigError("device", f"{name} was asked for, but this machine has {have}; use --device cpu or auto")
    return f"cuda:{index}"
