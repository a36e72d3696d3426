"""The option-letter policy of one agent, in torch: log-probabilities of the option letters.

An agent answers a multiple-choice question with the first token of an option letter
("A", "B", ...).  The runtime reads the same number from llama.cpp
(:meth:`runtime.llama_backend.LlamaCppBackend.score_options`): the log-softmax over the
whole vocabulary at the last prompt position, at each option's first token.  Here the
prompt's token ids come from the runtime too (the caller passes them), so the trained
model and the deployed one see exactly the same tokens.

The model may sit on a GPU: its inputs are moved to its device and the option numbers
(a few per prompt) come back to the CPU, gradients included.

Two distributions follow from those numbers: the *vocabulary* log-probabilities of the
options (what the runtime reports and what the call log stores) and the *policy*, the
softmax restricted to the options (the agent's action distribution, whose argmax is the
runtime's answer).  Training works on the policy.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch

__all__ = ["option_logprobs", "policy_logprobs", "decoder_parts", "last_position_logprobs", "model_device"]


def decoder_parts(model: Any) -> tuple[Any, Any, float | None]:
    """(decoder, output head, logit soft-cap) of a causal LM, a peft model around one included."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    cap = getattr(base.config, "final_logit_softcapping", None)
    return base.model, base.lm_head, (float(cap) if cap else None)


def model_device(model: Any) -> torch.device:
    """The device of the model's weights."""
    return next(model.parameters()).device


def option_logprobs(model: Any, prompts: Sequence[Sequence[int]], option_ids: Sequence[int], *,
                    pad_id: int = 0) -> torch.Tensor:
    """Vocabulary log-probabilities of the option tokens after each prompt, shape (B, K).

    ``prompts`` are token ids (right-padded here into one batch; a causal model's earlier
    positions never see the padding), ``option_ids`` the first token of each option.  Only
    the last real position of each prompt goes through the output head, so a batch of long
    prompts costs no (B, T, vocabulary) tensor.
    """
    if not prompts:
        raise ValueError("no prompt to score")
    if not option_ids:
        raise ValueError("no option to score")
    lengths = [len(p) for p in prompts]
    if min(lengths) == 0:
        raise ValueError("an empty prompt cannot be scored")
    width = max(lengths)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, p in enumerate(prompts):
        ids[row, :len(p)] = torch.tensor(list(p), dtype=torch.long)
        mask[row, :len(p)] = 1
    decoder, _, _ = decoder_parts(model)
    device = model_device(model)
    hidden = decoder(input_ids=ids.to(device), attention_mask=mask.to(device)).last_hidden_state
    return last_position_logprobs(model, hidden, lengths, option_ids)


def last_position_logprobs(model: Any, hidden: torch.Tensor, lengths: Sequence[int],
                           option_ids: Sequence[int]) -> torch.Tensor:
    """The output head at each prompt's last real position of the decoder's output
    ``hidden`` (B, T, D): vocabulary log-probabilities of the option tokens, (B, K), on
    the CPU whatever the model's device."""
    _, head, cap = decoder_parts(model)
    rows = torch.arange(len(lengths), device=hidden.device)
    last = hidden[rows, torch.tensor(list(lengths), device=hidden.device) - 1]
    logits = head(last).float()
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return torch.log_softmax(logits, dim=-1)[:, list(option_ids)].cpu()


def policy_logprobs(vocab_logprobs: torch.Tensor) -> torch.Tensor:
    """The agent's action distribution over its options (log-softmax restricted to them)."""
    return torch.log_softmax(vocab_logprobs, dim=-1)
