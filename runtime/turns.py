"""Agent turns: a scored answer over option labels plus a short generated rationale.

A :class:`TurnRequest` asks a model to read a prompt and give (a) the log-probability of
each option's first token at the start of its reply (one forward pass, as
:meth:`runtime.backends.Backend.score_options` does) and (b) a rationale decoded from the
same position.  A :class:`TurnRunner` answers a list of requests at once, so a runner
that can batch (:class:`runtime.llama_batch.BatchedLlamaTurns`) shares the prompts'
common prefix and decodes the rationales together; :class:`SequentialTurns` serves any
backend one request after another.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

from common.errors import ConfigError
from runtime.backends import Backend, BackendError
from runtime.messages import GenerationOptions, Message

__all__ = ["TurnRequest", "TurnResult", "TurnRunner", "SequentialTurns", "sample_token", "error_result"]


@dataclass(frozen=True)
class TurnRequest:
    """One turn: the messages, the option labels scored, the rationale budget and its decoding."""

    messages: tuple[Message, ...]
    options: tuple[str, ...]
    max_tokens: int = 48
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", tuple(self.messages))
        object.__setattr__(self, "options", tuple(self.options))
        if len(self.options) < 2 or len(set(self.options)) != len(self.options) or not all(self.options):
            raise ConfigError("options", f"need two or more distinct non-empty options, got {self.options}")
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise ConfigError("max_tokens", f"must be a whole number >= 1, got {self.max_tokens!r}")
        if not 0.0 <= float(self.temperature) <= 5.0:
            raise ConfigError("temperature", f"must lie in [0, 5], got {self.temperature}")
        if not 0.0 < float(self.top_p) <= 1.0:
            raise ConfigError("top_p", f"must lie in (0, 1], got {self.top_p}")
        if not self.messages:
            raise ConfigError("messages", "a turn needs at least one message")


@dataclass(frozen=True)
class TurnResult:
    """What a model gave for one turn.

    logprobs : log-softmax over the whole vocabulary of each option's first token.
    reused_tokens : prompt tokens whose KV state was shared or kept, not evaluated again.
    error : why the turn failed (then ``logprobs`` are uniform and ``text`` is empty).
    """

    logprobs: tuple[float, ...]
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reused_tokens: int = 0
    duration_s: float = 0.0
    error: str | None = None


def error_result(request: TurnRequest, message: str, *, duration_s: float = 0.0) -> TurnResult:
    """A failed turn: uniform scores, no text, the reason."""
    uniform = -float(np.log(len(request.options)))
    return TurnResult(tuple(uniform for _ in request.options), "", duration_s=duration_s, error=message)


class TurnRunner(Protocol):
    """Answers turns; results come back in request order and one bad request never
    raises (its result carries the error)."""

    name: str
    model_id: str
    model_sha256: str

    def run(self, requests: Sequence[TurnRequest]) -> list[TurnResult]: ...


def sample_token(logits: np.ndarray, *, temperature: float, top_p: float, rng: np.random.Generator) -> int:
    """Pick the next token: argmax for temperature 0 (lowest id on ties), otherwise a draw
    from softmax(logits / temperature) restricted to the smallest set of most probable
    tokens whose mass reaches ``top_p``."""
    values = np.asarray(logits, dtype=np.float64)
    if temperature <= 0.0:
        return int(np.argmax(values))
    scaled = values / temperature
    probs = np.exp(scaled - scaled.max())
    probs /= probs.sum()
    order = np.argsort(-probs, kind="stable")
    if top_p < 1.0:
        keep = int(np.searchsorted(np.cumsum(probs[order]), top_p) + 1)
        order = order[:keep]
    chosen = probs[order] / probs[order].sum()
    return int(order[int(rng.choice(len(order), p=chosen))])


class SequentialTurns:
    """Any backend, one request after another: ``score_options`` then ``generate``."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.name = f"{backend.name}/sequential"
        self.model_id, self.model_sha256 = backend.model_id, backend.model_sha256

    def _one(self, request: TurnRequest) -> TurnResult:
        start = time.perf_counter()
        try:
            scores = self.backend.score_options(list(request.messages), list(request.options))
            reply = self.backend.generate(list(request.messages),
                                          GenerationOptions(temperature=request.temperature, seed=request.seed,
                                                            max_tokens=request.max_tokens))
        except BackendError as exc:
            return error_result(request, str(exc), duration_s=time.perf_counter() - start)
        return TurnResult(tuple(scores.logprobs), reply.text, prompt_tokens=scores.prompt_tokens,
                          completion_tokens=reply.completion_tokens, reused_tokens=0,
                          duration_s=time.perf_counter() - start)

    def run(self, requests: Sequence[TurnRequest]) -> list[TurnResult]:
        return [self._one(r) for r in requests]
