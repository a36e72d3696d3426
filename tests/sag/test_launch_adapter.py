"""A launched group can give a trained adapter to chosen roles; other bases are refused."""
from __future__ import annotations

import pytest

from common.errors import ConfigError
from sag.config import preset
from sag.launch import launch_spec, with_adapter


def test_the_chosen_roles_run_the_adapter_and_the_others_the_base() -> None:
    cfg = with_adapter(preset("sag-6"), "smollm2-135m", "runs/train/r1/adapter.gguf", ("reasoning", "judge"))
    assert cfg.backbones == ("smollm2-135m+lora:file:runs/train/r1/adapter.gguf", "smollm2-135m", "smollm2-135m",
                             "smollm2-135m+lora:file:runs/train/r1/adapter.gguf")
    assert cfg.digest() != preset("sag-6").digest()  # another group: its results are stored apart


def test_a_role_on_another_base_or_an_unknown_role_is_refused() -> None:
    with pytest.raises(ConfigError, match="trained on smollm2-135m"):
        with_adapter(preset("sag-6-mixed"), "smollm2-135m", "a.gguf", ("reasoning",))  # A_R runs Gemma
    with pytest.raises(ConfigError, match="choose roles"):
        with_adapter(preset("sag-6"), "smollm2-135m", "a.gguf", ("surgeon",))
    with pytest.raises(ConfigError, match="choose roles"):
        with_adapter(preset("sag-6"), "smollm2-135m", "a.gguf", ())


def test_launch_spec_passes_the_adapter_on() -> None:
    spec = launch_spec("medqa", "single", 2, 0, 3, adapter=("smollm2-135m", "a.gguf", ("reasoning",)))
    assert spec.cfg.backbones[0] == "smollm2-135m+lora:file:a.gguf"
