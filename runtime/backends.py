"""Model backends behind one interface: ``generate`` and ``score_options``.

- :class:`LlamaCppBackend` (in :mod:`runtime.llama_backend`): a GGUF model in process.

A backend never raises on a bad model reply: parsing is the agent's job.  It raises
:class:`BackendError` when the model cannot be called at all.
"""
from __future__ import annotations

from typing import Protocol, Sequence

from common.errors import ProjectError
from runtime.messages import GenerationOptions, Message, OptionScores, Reply

__all__ = ["Backend", "BackendError"]


class BackendError(ProjectError):
    """The model could not be called (missing file, bad model, server down ...)."""


class Backend(Protocol):
    """What an agent needs from a model."""

    name: str
    model_id: str
    model_sha256: str

    def generate(self, messages: Sequence[Message], options: GenerationOptions) -> Reply: ...

    def score_options(self, messages: Sequence[Message], options: Sequence[str]) -> OptionScores:
        """Log-probabilities of each option string as the first token of the reply."""
        ...
