"""A tiny random llama model with LoRA, and items it can learn: the answer is written in the prompt."""
from __future__ import annotations

from typing import Any

import numpy as np

from training.config import LoraSettings
from training.letter_task import LetterItems

VOCAB = 48
OPTIONS = (40, 41, 42, 43)  # the option tokens


def tiny_model(seed: int = 0, *, layers: int = 2, lora: LoraSettings = LoraSettings(r=4, alpha=8.0)) -> Any:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from training.base_model import add_lora

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    model = LlamaForCausalLM(config)
    for p in model.parameters():
        p.requires_grad_(False)
    return add_lora(model, lora)


def cue_items(n: int, seed: int) -> LetterItems:
    """Item i shows cue token 10 + answer among noise; the right option is the answer."""
    rng = np.random.default_rng(seed)
    right = rng.integers(0, len(OPTIONS), size=n)
    tokens = []
    for r in right:
        noise = [int(t) for t in rng.integers(20, 39, size=int(rng.integers(3, 8)))]
        tokens.append(tuple([1, *noise, 10 + int(r), 2]))
    rewards = np.full((n, len(OPTIONS)), -1.0)
    rewards[np.arange(n), right] = 1.0
    return LetterItems(tuple(f"i{k}" for k in range(n)), tuple(tokens), OPTIONS, ("A", "B", "C", "D"), rewards, right)


def tiny_base(seed: int = 0, *, layers: int = 2) -> Any:
    """The tiny model without adapters (frozen)."""
    return tiny_model(seed, layers=layers).unload()
