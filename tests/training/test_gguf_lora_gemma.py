"""The LoRA export on the packaged Gemma 3 270M (no query/key permutation in its GGUF file).
Run with ``-m adapter_large`` (loading Gemma in torch takes about a minute).

Measured on the 10 shortest held-out MedQA items with a rank-8 adapter on every linear
projection (lora_B ~ N(0, 0.05^2)): the adapter moves the option log-probabilities by
0.98 on average, and the changes torch and llama.cpp see correlate at 0.982; the same
letter on 9 items (the base alone: 10).
"""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from runtime.factory import make_backend
from runtime.registry import resolve
from tests.training.roundtrip import (add_lora, held_out_items, llama_option_logprobs, randomize_lora, shortest,
                                      torch_option_logprobs)
from training.gguf_lora import export_lora_gguf

log = logging.getLogger(__name__)
GEMMA = "gemma3-270m"


@pytest.mark.adapter_large
def test_gemma_adapter_changes_llama_cpp_as_it_changes_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    monkeypatch.setenv("DCEM_MODELS_DIR", str(tmp_path))
    monkeypatch.setenv("DCEM_MODEL_CACHE", str(tmp_path / "cache"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        path = resolve(GEMMA)
        model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
        peft_model = add_lora(model.eval())
        randomize_lora(peft_model)
        adapter = export_lora_gguf(peft_model, path, tmp_path / "gemma.gguf")
        base, tuned = (make_backend(key, n_ctx=2048, n_threads=1) for key in (GEMMA, f"{GEMMA}+lora:file:{adapter}"))
        items = shortest(held_out_items(50), 10)
        with peft_model.disable_adapter():
            torch_base = torch_option_logprobs(peft_model, base, items)
        torch_tuned = torch_option_logprobs(peft_model, base, items)
    finally:
        torch.set_num_threads(threads)
    llama_base, llama_tuned = llama_option_logprobs(base, items), llama_option_logprobs(tuned, items)
    corr = float(np.corrcoef((torch_tuned - torch_base).ravel(), (llama_tuned - llama_base).ravel())[0, 1])
    same, base_same = (int((a.argmax(1) == b.argmax(1)).sum())
                       for a, b in ((torch_tuned, llama_tuned), (torch_base, llama_base)))
    moved = float(np.abs(llama_tuned - llama_base).mean())
    log.info("gemma3: same letter %d (base %d), moved %.3f, correlation of the changes %.3f", same, base_same,
             moved, corr)
    assert moved > 0.1 and corr > 0.9
    assert same >= base_same - 2
