"""Scoring option letters with the lower decoder layers computed once per prompt.

When LoRA adapts only the top ``n`` decoder layers (``LoraSettings.layers``), the layers
below them never change during a run: their output for a prompt is the same at every step,
for the trained policy and for the reference alike.  :class:`OptionScorer` computes that
output once per prompt (no gradient), keeps it, and from then on runs only the top layers,
forward and backward.  On SmolLM2-135M (30 layers) with the top 8 adapted a training step
does roughly a quarter of the work of a full one (measured in ``benchmarks/``).

With ``layers`` 0 (adapters on every layer) the scorer is the plain full forward of
:func:`training.letters.option_logprobs`.

The top layers run through the model's own decoder (its rotary embeddings, its causal
mask, its final norm) by handing it the cached hidden states as input embeddings with
only the top layers in place; the first scored prompt is checked against the full forward,
so a model family whose decoder treats input embeddings differently is refused rather than
trained wrongly.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

import torch

from training.letters import (check_continuations, continuation_from_hidden, continuation_logprobs, decoder_parts,
                              last_position_logprobs, model_device, option_logprobs)

__all__ = ["OptionScorer", "lower_layers_are_frozen", "CHECK_TOLERANCE"]

CHECK_TOLERANCE = 1e-3
"""Largest difference of option log-probabilities allowed between the cached path and the
full forward on the first prompt."""


def lower_layers_are_frozen(model: Any, n_frozen: int) -> bool:
    """Whether no parameter of decoder layers ``0 .. n_frozen - 1`` is trainable and none of
    them carries an adapter (so their output cannot change during training)."""
    decoder, _, _ = decoder_parts(model)
    for layer in decoder.layers[:n_frozen]:
        if any(p.requires_grad for p in layer.parameters()):
            return False
        if any("lora_" in name for name, _ in layer.named_modules()):
            return False
    return not any(p.requires_grad for p in decoder.embed_tokens.parameters())


@contextlib.contextmanager
def _only_layers(decoder: Any, layers: Sequence[Any]) -> Iterator[None]:
    kept = decoder.layers
    decoder.layers = torch.nn.ModuleList(list(layers))
    try:
        yield
    finally:
        decoder.layers = kept


class OptionScorer:
    """Vocabulary log-probabilities of option tokens after prompts, shape (B, K).

    ``frozen_layers`` > 0 caches the output of that many lower decoder layers per prompt
    (keyed by its token ids) and runs only the layers above; the lower layers must be
    frozen and adapter-free (checked).  The kept states wait on the CPU (on a GPU their
    memory would grow with the training set) and go to the model's device per batch."""

    def __init__(self, model: Any, *, frozen_layers: int = 0, pad_id: int = 0) -> None:
        decoder, _, _ = decoder_parts(model)
        total = len(decoder.layers)
        if not 0 <= frozen_layers < total:
            raise ValueError(f"frozen_layers must be from 0 to {total - 1} for a model of {total} layers, "
                             f"got {frozen_layers}")
        if frozen_layers and not lower_layers_are_frozen(model, frozen_layers):
            raise ValueError(f"the lower {frozen_layers} layers carry adapters or trainable weights; "
                             "they cannot be computed once and kept")
        self.model, self.frozen_layers, self.pad_id = model, frozen_layers, pad_id
        self._cache: dict[tuple[int, ...], torch.Tensor] = {}
        self._checked = frozen_layers == 0

    @property
    def cached_prompts(self) -> int:
        return len(self._cache)

    def __call__(self, prompts: Sequence[Sequence[int]], option_ids: Sequence[int]) -> torch.Tensor:
        if not self.frozen_layers:
            return option_logprobs(self.model, prompts, option_ids, pad_id=self.pad_id)
        if not prompts:
            raise ValueError("no prompt to score")
        if not option_ids:
            raise ValueError("no option to score")
        keys = [tuple(int(t) for t in p) for p in prompts]
        if min(len(k) for k in keys) == 0:
            raise ValueError("an empty prompt cannot be scored")
        self._fill([k for k in dict.fromkeys(keys) if k not in self._cache])
        scores = self._top(keys, option_ids)
        if not self._checked:
            self._check(keys[0], option_ids, scores[0])
        return scores

    def continuations(self, prompts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]], *,
                      temperature: float = 1.0) -> torch.Tensor:
        """Each continuation's log-probability after its prompt, (B,)
        (:func:`training.letters.continuation_logprobs`), the lower layers' output kept per
        whole sequence (prompt and continuation)."""
        if not self.frozen_layers:
            return continuation_logprobs(self.model, prompts, continuations, temperature=temperature,
                                         pad_id=self.pad_id)
        check_continuations(prompts, continuations, temperature)
        keys = [tuple(int(t) for t in p) + tuple(int(t) for t in c) for p, c in zip(prompts, continuations)]
        self._fill([k for k in dict.fromkeys(keys) if k not in self._cache])
        hidden, _ = self._top_hidden(keys)
        scores = continuation_from_hidden(self.model, hidden, [len(p) for p in prompts], continuations, temperature)
        if not self._checked:
            with torch.no_grad():
                full = continuation_logprobs(self.model, prompts[:1], continuations[:1], temperature=temperature)
            self._compare(float((full[0] - scores[0].detach()).abs()))
        return scores

    def _fill(self, keys: Sequence[tuple[int, ...]]) -> None:
        """Hidden states entering layer ``frozen_layers`` for each new prompt (one at a time:
        no padding, so each is exactly what a batch of one computes)."""
        if not keys:
            return
        decoder, _, _ = decoder_parts(self.model)
        captured: list[torch.Tensor] = []

        def keep(_module: Any, _args: Any, output: Any) -> None:
            captured.append((output[0] if isinstance(output, tuple) else output).detach())

        last = decoder.layers[self.frozen_layers - 1]
        with torch.no_grad(), _only_layers(decoder, decoder.layers[:self.frozen_layers]):
            hook = last.register_forward_hook(keep)
            try:
                for key in keys:
                    captured.clear()
                    ids = torch.tensor([key], dtype=torch.long, device=model_device(self.model))
                    decoder(input_ids=ids, attention_mask=torch.ones_like(ids))
                    self._cache[key] = captured[-1][0].to("cpu", copy=True)
            finally:
                hook.remove()

    def _top(self, keys: Sequence[tuple[int, ...]], option_ids: Sequence[int]) -> torch.Tensor:
        hidden, lengths = self._top_hidden(keys)
        return last_position_logprobs(self.model, hidden, lengths, option_ids)

    def _top_hidden(self, keys: Sequence[tuple[int, ...]]) -> tuple[torch.Tensor, list[int]]:
        """The top layers' output over the kept lower-layer states of ``keys``, (B, T, D)."""
        decoder, _, _ = decoder_parts(self.model)
        lengths = [len(k) for k in keys]
        width, dim = max(lengths), self._cache[keys[0]].shape[-1]
        embeds = torch.zeros((len(keys), width, dim), dtype=self._cache[keys[0]].dtype)
        mask = torch.zeros((len(keys), width), dtype=torch.long)
        for row, key in enumerate(keys):
            embeds[row, :len(key)] = self._cache[key]
            mask[row, :len(key)] = 1
        device = model_device(self.model)
        with _only_layers(decoder, decoder.layers[self.frozen_layers:]):
            hidden = decoder(inputs_embeds=embeds.to(device), attention_mask=mask.to(device)).last_hidden_state
        return hidden, lengths

    def _check(self, key: tuple[int, ...], option_ids: Sequence[int], cached: torch.Tensor) -> None:
        with torch.no_grad():
            full = option_logprobs(self.model, [key], option_ids, pad_id=self.pad_id)[0]
        self._compare(float((full - cached.detach()).abs().max()))

    def _compare(self, gap: float) -> None:
        if not gap <= CHECK_TOLERANCE:
            raise RuntimeError(f"the cached lower layers do not reproduce this model's full forward "
                               f"(largest gap {gap:.2e}); train it with adapters on every layer (layers 0)")
        self._checked = True
