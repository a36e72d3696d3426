"""Where torch trains: device names are checked, ``auto`` takes a GPU only when torch sees
one, a GPU the machine lacks is refused with one line, and the device (like the thread
count) is not part of a run's id.  The model's option numbers come back to the CPU with
their gradient whatever the model's device (here the CPU: this machine has no GPU)."""
from __future__ import annotations

import hashlib
import json

import pytest

from common.errors import ConfigError
from training.config import TrainSettings
from training.device import check_device_name, resolve_device


@pytest.mark.parametrize("name", ["auto", "cpu", "cuda", "cuda:0", "cuda:12"])
def test_device_names_of_the_accepted_forms_pass(name: str) -> None:
    assert check_device_name(name) == name


@pytest.mark.parametrize("name", ["gpu", "CUDA", "cuda:", "cuda:x", "mps", "", 0, None])
def test_other_device_names_are_refused(name: object) -> None:
    with pytest.raises(ConfigError, match="device: must be auto, cpu, cuda or cuda:N"):
        check_device_name(name)
    with pytest.raises(ConfigError, match="device"):
        TrainSettings(device=name)  # type: ignore[arg-type]


def _gpus(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)


def test_auto_takes_the_first_gpu_when_torch_sees_one(monkeypatch: pytest.MonkeyPatch) -> None:
    _gpus(monkeypatch, 2)
    assert resolve_device("auto") == "cuda:0"
    assert resolve_device("cuda") == "cuda:0" and resolve_device("cuda:1") == "cuda:1"
    assert resolve_device("cpu") == "cpu"
    with pytest.raises(ConfigError, match="cuda:2 was asked for, but this machine has 2 CUDA devices"):
        resolve_device("cuda:2")


def test_without_a_gpu_auto_is_the_cpu_and_cuda_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _gpus(monkeypatch, 0)
    assert resolve_device("auto") == "cpu"
    with pytest.raises(ConfigError) as caught:
        resolve_device("cuda")
    assert str(caught.value).count("\n") == 0
    assert "no CUDA device torch can use; use --device cpu or auto" in str(caught.value)


def test_the_device_and_threads_change_no_run_id_and_are_not_recorded() -> None:
    base = TrainSettings(steps=7)
    for other in (TrainSettings(steps=7, device="cuda:1"), TrainSettings(steps=7, device="cpu", threads=3)):
        assert other.digest("m", "h") == base.digest("m", "h")
    assert "device" not in base.recorded() and "threads" not in base.recorded()
    assert TrainSettings(steps=7, seed=1).digest("m", "h") != base.digest("m", "h")
    # the id is the hash of the recorded settings and the parts
    before = {k: v for k, v in base.to_dict().items()
              if k not in ("threads", "device", "steps", "checkpoint_every", "sampling",
                                   "supervised")}  # uniform sampling, no supervised term: ids as before
    text = json.dumps([before, "m", "h"], sort_keys=True, default=list)
    assert base.digest("m", "h") == hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def test_option_numbers_come_back_on_the_cpu_with_their_gradient() -> None:
    import torch

    from tests.training.tiny import tiny_base
    from training.config import LoraSettings
    from training.base_model import add_lora
    from training.letters import model_device, option_logprobs
    from training.scorer import OptionScorer

    model = add_lora(tiny_base(), LoraSettings(r=4, alpha=8.0, layers=1))
    assert model_device(model) == torch.device("cpu")
    prompts = [[5, 6, 7, 8], [9, 10, 11]]
    full = option_logprobs(model, prompts, [3, 4])
    cached = OptionScorer(model, frozen_layers=1)(prompts, [3, 4])
    assert full.device.type == "cpu" and cached.device.type == "cpu"
    assert full.requires_grad and cached.requires_grad
    assert torch.allclose(full, cached, atol=1e-4)
    cached.sum().backward()
    assert any(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in model.parameters() if p.requires_grad)
