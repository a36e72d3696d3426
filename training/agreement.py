"""Does llama.cpp run a trained adapter as torch does?  The same prompts scored both ways.

torch: the GGUF base dequantized by transformers with the adapter read back from its GGUF
file (:func:`training.gguf_lora_read.load_lora_gguf`); llama.cpp: the runtime's backend
for ``<base>+lora:...``.  Both score the option tokens after the same token ids (the
runtime's).  The two bases differ a little by themselves (llama.cpp multiplies quantized
weights with 8-bit activations, torch uses the dequantized weights in float32), so the
comparison is the share of prompts with the same most probable option and the mean
absolute difference of the option log-probabilities.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

__all__ = ["Agreement", "compare_backends"]


@dataclass(frozen=True)
class Agreement:
    items: int
    same_letter: int
    mean_abs_diff: float
    torch_letters: tuple[int, ...]
    llama_letters: tuple[int, ...]


def compare_backends(backend: Any, adapter: Path, base_gguf: Path, prompts: Sequence[Sequence[Any]],
                     options: Sequence[str]) -> Agreement:
    """Score ``prompts`` (message lists) over ``options`` with the llama.cpp ``backend`` (which
    runs the adapter) and with torch (base + ``adapter``)."""
    import torch

    from training.base_model import load_base
    from training.gguf_lora_read import load_lora_gguf
    from training.letters import option_logprobs

    model = load_lora_gguf(load_base(base_gguf), adapter, base_gguf)
    ids = [backend.option_token(o) for o in options]
    tokens = [backend.prompt_tokens(m) for m in prompts]
    torch_rows = []
    with torch.no_grad():
        for lo in range(0, len(tokens), 8):
            torch_rows.extend(option_logprobs(model, tokens[lo:lo + 8], ids).double().numpy())
    llama_rows = [np.array(backend.score_options(m, list(options)).logprobs) for m in prompts]
    t, ll = np.array(torch_rows), np.array(llama_rows)
    return Agreement(len(prompts), int((t.argmax(1) == ll.argmax(1)).sum()), float(np.abs(t - ll).mean()),
                     tuple(int(x) for x in t.argmax(1)), tuple(int(x) for x in ll.argmax(1)))
