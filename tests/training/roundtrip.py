"""What the adapter round-trip tests share: held-out MedQA prompts, SmolLM2 in torch with
a LoRA on every linear projection, and option log-probabilities computed by torch on the
llama.cpp backend's own token ids."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from clinical.questions import QuestionItem, load_benchmark
from runtime.llama_backend import LlamaCppBackend
from runtime.messages import Message, Role

ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
B_STD = 0.05  # lora_B ~ N(0, B_STD^2)
SEED = 20260401


def held_out_items(n: int) -> list[QuestionItem]:
    """The last ``n`` MedQA items outside the evaluation suite's subsets."""
    from sag.evaluation.subsets import load_subsets

    subsets = load_subsets()
    used = set(subsets.eval_ids("medqa")) | set(subsets.calibration_ids("medqa")) | set(subsets.vignettes())
    return [item for item in load_benchmark("medqa") if item.item_id not in used][-n:]


def shortest(items: Sequence[QuestionItem], n: int) -> list[QuestionItem]:
    """The ``n`` items with the shortest question and options (quick to evaluate), in id order."""
    chosen = sorted(items, key=lambda i: (len(i.question) + sum(len(t) for _, t in i.options), i.item_id))[:n]
    return sorted(chosen, key=lambda i: i.item_id)


def messages(item: QuestionItem) -> list[Message]:
    options = "\n".join(f"{letter}. {text}" for letter, text in item.options)
    return [Message(Role.SYSTEM, "You are a medical expert. Answer with the letter of the best option."),
            Message(Role.USER, f"{item.question}\n\n{options}\n\nAnswer with one letter.")]


def load_torch_smol(path: Path) -> Any:
    """The packaged SmolLM2 GGUF dequantized by transformers (float32, eval mode, frozen; read
    from training.base_cache's copy after the first load)."""
    from training.base_model import load_base

    return load_base(path)


def add_lora(model: Any, rank: int = 8, alpha: float = 16.0) -> Any:
    """A peft LoRA of rank ``rank`` on every linear projection (lora_B still zero)."""
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(r=rank, lora_alpha=alpha, target_modules=list(ALL_LINEAR), lora_dropout=0.0)
    return get_peft_model(model, config).eval()


def randomize_lora(model: Any, std: float = B_STD, seed: int = SEED) -> None:
    """A stand-in for training, from one seeded generator: every lora_A drawn as peft
    initialises it (uniform in +-1/sqrt(in)), every lora_B normal with ``std``."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_A" in name:
                bound = 1.0 / param.shape[1] ** 0.5
                param.copy_((torch.rand(param.shape, generator=generator) * 2 - 1) * bound)
            elif "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * std)


@contextmanager
def zero_lora_b(model: Any) -> Iterator[None]:
    """Every lora_B set to zero inside the block (the adapter then changes nothing)."""
    import torch

    saved = {name: param.detach().clone() for name, param in model.named_parameters() if "lora_B" in name}
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name in saved:
            params[name].zero_()
    try:
        yield
    finally:
        with torch.no_grad():
            for name, value in saved.items():
                params[name].copy_(value)


def torch_option_logprobs(model: Any, backend: LlamaCppBackend, items: Sequence[QuestionItem]) -> np.ndarray:
    """Log-softmax over the vocabulary at the last prompt position, at each option letter's
    first token, with the backend's token ids as input: shape (items, options)."""
    import torch

    rows = []
    with torch.inference_mode():
        for item in items:
            ids = torch.tensor([backend.prompt_tokens(messages(item))])
            logits = model(input_ids=ids, logits_to_keep=1).logits[0, -1].to(torch.float64)
            logprobs = torch.log_softmax(logits, dim=-1)
            rows.append([float(logprobs[backend.option_token(letter)]) for letter in item.letters])
    return np.array(rows)


def llama_option_logprobs(backend: LlamaCppBackend, items: Sequence[QuestionItem]) -> np.ndarray:
    return np.array([backend.score_options(messages(item), list(item.letters)).logprobs for item in items])
