"""Model backends behind one interface: ``generate`` and ``score_options``.

- :class:`LlamaCppBackend` (in :mod:`runtime.llama_backend`): a GGUF model in process.
- :class:`FleetBackend` (in :mod:`runtime.http_fleet`): OpenAI-compatible servers.

A backend offers the runner of a group's turns on it (``turn_runner``): the batched
runner for llama.cpp in process, concurrent turns for a server fleet, and by default
(a backend that offers none) one turn after another.  Callers ask
:func:`runtime.turns.runner_of`, never the backend's class.  Backends are made by
:mod:`runtime.factory` only.

A backend never raises on a bad model reply: parsing is the agent's job.  It raises
:class:`BackendError` when the model cannot be called at all.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Sequence

from common.errors import ProjectError
from runtime.messages import GenerationOptions, Message, OptionScores, Reply

if TYPE_CHECKING:
    from runtime.turns import TurnRunner

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

    def turn_runner(self, *, batched: bool = True, n_ctx: int | None = None, width: int = 8) -> TurnRunner:
        """The runner of a group's turns on this backend.  ``batched`` lets a backend that
        can decode ``width`` agents together (each with ``n_ctx`` tokens of context, None:
        the backend's own) do so.  The default, also for a backend that does not define
        this method (:func:`runtime.turns.runner_of`): one turn after another."""
        from runtime.turns import SequentialTurns

        return SequentialTurns(self)
