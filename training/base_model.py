"""The trainable model: a packaged GGUF base dequantized by transformers, with LoRA adapters.

No download: transformers' GGUF loader reads the very file llama.cpp runs
(``from_pretrained(folder, gguf_file=name)``) and dequantizes it to float32, once per file
(:mod:`training.base_cache` keeps the float32 copy).  LoRA
adapters (peft) go on the chosen linear layers; the base stays frozen, so the reference
policy of the KL term is the same model with its adapters switched off
(:func:`reference_mode`), no second copy in memory.
"""
from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any, Iterator, Sequence

from common.errors import ConfigError
from training.config import LoraSettings

__all__ = ["load_base", "add_lora", "frozen_layers", "quiet_training_warnings", "reference_mode", "set_threads", "trainable_parameters"]

log = logging.getLogger(__name__)


def set_threads(threads: int | None) -> int:
    """torch's CPU threads (None: every core, or ``$DCEM_THREADS``); returns the number used."""
    import torch

    from common.threads import default_threads

    n = threads or default_threads()
    torch.set_num_threads(n)
    return n


def load_base(gguf_path: Path, device: str = "cpu") -> Any:
    """The float32 causal LM of a GGUF file, frozen, in evaluation mode, on ``device`` (a
    torch device name, see :func:`training.device.resolve_device`)."""
    from transformers.utils import logging as hf_logging

    from training.base_cache import load_cached

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    model = load_cached(Path(gguf_path), _from_gguf)
    model.to(device)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def _from_gguf(gguf_path: Path) -> Any:
    """transformers' own reading of the GGUF file, dequantized to float32 (the slow path)."""
    import torch
    from transformers import AutoModelForCausalLM

    with _no_conversion_bar():
        return AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name,
                                                    dtype=torch.float32)


@contextlib.contextmanager
def _no_conversion_bar() -> Iterator[None]:
    """transformers' GGUF loader draws its own progress bar (not switched off by its logging
    settings); a command has its own, so this one is silenced while the base loads."""
    import functools

    try:
        from transformers import modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:  # another transformers layout: the bar stays
        yield
        return
    bar = getattr(gguf_utils, "tqdm", None)
    if bar is None:
        yield
        return
    gguf_utils.tqdm = functools.partial(bar, disable=True)
    try:
        yield
    finally:
        gguf_utils.tqdm = bar


def quiet_training_warnings() -> None:
    """Silence the training libraries' notices that say nothing about this project's runs
    (a deprecation inside transformers that peft triggers; peft's note that a GGUF base has no
    Hugging Face config folder when it saves a checkpoint)."""
    import warnings

    warnings.filterwarnings("ignore", message=r".*is_gradient_checkpointing.*", category=FutureWarning)
    warnings.filterwarnings("ignore", message=r"Could not find a config file in .*", category=UserWarning)


def add_lora(model: Any, settings: LoraSettings, names: Sequence[str] = ("default",)) -> Any:
    """The model with fresh LoRA adapters (B = 0: each starts as the base), on every decoder
    layer or on the top ``settings.layers``; :class:`~common.errors.ConfigError` when the
    model has fewer layers than that.  Several ``names`` give one adapter each on the same
    base (one per role); the first is active."""
    from peft import LoraConfig, get_peft_model

    if not names or len(set(names)) != len(names):
        raise ValueError("give one or more distinct adapter names")

    total = int(model.config.num_hidden_layers)
    if settings.layers > total:
        raise ConfigError("lora_layers", f"the model has {total} decoder layers, got {settings.layers}")
    top = list(range(total - settings.layers, total)) if settings.layers else None
    config = LoraConfig(r=settings.r, lora_alpha=settings.alpha, lora_dropout=0.0,
                        target_modules=list(settings.targets), bias="none", task_type="CAUSAL_LM",
                        layers_to_transform=top, layers_pattern="layers" if top else None)
    peft_model = get_peft_model(model, config, adapter_name=names[0])
    for name in names[1:]:
        peft_model.add_adapter(name, config)
    peft_model.set_adapter(names[0])
    return peft_model


def adapter_names(model: Any) -> tuple[str, ...]:
    """The names of the model's LoRA adapters, in the order they were added."""
    return tuple(getattr(model, "peft_config", {}))


def adapter_parameters(model: Any) -> list[Any]:
    """Every adapter's weights (also those of inactive adapters, which peft marks frozen)."""
    names = adapter_names(model)
    return [p for n, p in model.named_parameters() if "lora_" in n and any(f".{a}." in n + "." for a in names)]


def use_adapter(model: Any, name: str) -> None:
    """Make ``name`` the active adapter (its weights trainable) unless it already is."""
    if model.active_adapter != name:
        model.set_adapter(name)


def frozen_layers(model: Any, settings: LoraSettings) -> int:
    """How many lower decoder layers carry no adapter (0 when every layer does)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return int(base.config.num_hidden_layers) - settings.layers if settings.layers else 0


@contextlib.contextmanager
def reference_mode(model: Any) -> Iterator[None]:
    """Run the peft model as its frozen base (the reference policy) inside the block."""
    if hasattr(model, "disable_adapter"):
        with model.disable_adapter():
            yield
    else:
        yield


def trainable_parameters(model: Any) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
