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

__all__ = ["option_logprobs", "policy_logprobs", "decoder_parts", "last_position_logprobs", "model_device",
           "continuation_logprobs", "continuation_from_hidden", "check_continuations", "padded"]


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
    ids, mask = padded(prompts, pad_id)
    decoder, _, _ = decoder_parts(model)
    device = model_device(model)
    hidden = decoder(input_ids=ids.to(device), attention_mask=mask.to(device)).last_hidden_state
    return last_position_logprobs(model, hidden, lengths, option_ids)


def padded(sequences: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded token ids (B, T) and their attention mask."""
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, s in enumerate(sequences):
        ids[row, :len(s)] = torch.tensor(list(s), dtype=torch.long)
        mask[row, :len(s)] = 1
    return ids, mask


def continuation_logprobs(model: Any, prompts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]], *,
                          temperature: float = 1.0, pad_id: int = 0) -> torch.Tensor:
    """Log-probability of each generated continuation after its prompt, shape (B,): the sum
    over its tokens of log softmax(logits / ``temperature``) over the whole vocabulary at
    the token, given the prompt and the tokens before it.  This is a rationale's share of a
    trajectory's log-probability (the sampler's nucleus cut, if any, is not modelled)."""
    check_continuations(prompts, continuations, temperature)
    ids, mask = padded([list(p) + list(c) for p, c in zip(prompts, continuations)], pad_id)
    decoder, _, _ = decoder_parts(model)
    device = model_device(model)
    hidden = decoder(input_ids=ids.to(device), attention_mask=mask.to(device)).last_hidden_state
    return continuation_from_hidden(model, hidden, [len(p) for p in prompts], continuations, temperature)


def check_continuations(prompts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]],
                         temperature: float) -> None:
    if not prompts or len(prompts) != len(continuations):
        raise ValueError("give one continuation per prompt, at least one")
    if min(len(p) for p in prompts) == 0 or min(len(c) for c in continuations) == 0:
        raise ValueError("an empty prompt or continuation cannot be scored")
    if not temperature > 0:
        raise ValueError(f"temperature must be above 0, got {temperature!r}")


def continuation_from_hidden(model: Any, hidden: torch.Tensor, prompt_lengths: Sequence[int],
                             continuations: Sequence[Sequence[int]], temperature: float) -> torch.Tensor:
    """:func:`continuation_logprobs` from the decoder's output ``hidden`` (B, T, D) over each
    prompt followed by its continuation; on the CPU whatever the model's device."""
    _, head, cap = decoder_parts(model)
    sums = []
    for row, (n, cont) in enumerate(zip(prompt_lengths, continuations)):
        logits = head(hidden[row, n - 1:n - 1 + len(cont)]).float()  # position n-1 predicts the first token
        if cap:
            logits = torch.tanh(logits / cap) * cap
        logp = torch.log_softmax(logits / temperature, dim=-1)
        sums.append(logp[torch.arange(len(cont), device=logp.device),
                         torch.tensor(list(cont), device=logp.device)].sum())
    return torch.stack(sums).cpu()


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
