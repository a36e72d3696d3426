"""Agent turns: option scores and a short rationale from one prompt, for many requests.

A *turn* is what one agent of a group needs from the model in one round: the
probability of each option letter as the first token of its reply (read from the
next-token logits at the end of its prompt) and a short generated rationale.

- :class:`TurnRequest` / :class:`TurnResult` describe one turn.
- :class:`TurnRunner` is the interface: ``run(requests)`` returns results in request order.
- :class:`SequentialTurns` runs turns one after another on any
  :class:`~runtime.backends.Backend` (scripted, HTTP, llama.cpp).
- :class:`runtime.llama_batch.BatchedLlamaTurns` runs them batched on one llama.cpp
  model, sharing the KV cache of their common prompt prefix.
- :func:`runner_of` is the runner a backend offers (its ``turn_runner``, see
  :class:`~runtime.backends.Backend`), :class:`SequentialTurns` when it offers none.

:func:`sample_token` is the pure sampler both llama.cpp paths share; its random
generator is seeded per request, so a result never depends on the other requests of a
batch.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

from common.errors import ConfigError
from common.fields import Number, Seq, Spec, Text, Whole, check
from runtime.backends import Backend, BackendError
from runtime.messages import GenerationOptions, Message

__all__ = ["TurnRequest", "TurnResult", "TurnRunner", "SequentialTurns", "runner_of", "sample_token",
           "option_logprobs", "error_result"]

log = logging.getLogger(__name__)


_SAMPLING = Spec({"max_tokens": Whole(1), "temperature": Number(0.0, 5.0, msg="must lie in [0, 5], got {value}"),
                  "top_p": Number(0.0, 1.0, closed="right", msg="must lie in (0, 1], got {value}")})


@dataclass(frozen=True)
class TurnRequest:
    """One agent turn.

    messages : the chat, ending where the agent's reply starts.
    options : the option strings whose first token is scored (e.g. ``("A", "B", "C")``).
    max_tokens : rationale budget in tokens (>= 1).
    temperature, top_p, seed : rationale sampling; temperature 0 is greedy decoding.
    Lists given for ``messages`` or ``options`` are stored as tuples.
    """

    messages: tuple[Message, ...]
    options: tuple[str, ...]
    max_tokens: int = 48
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        """Check the messages, the options and the sampling settings."""
        object.__setattr__(self, "messages", tuple(self.messages))
        object.__setattr__(self, "options", tuple(self.options))
        if not self.messages:
            raise ConfigError("messages", "a turn needs at least one message")
        check("options", self.options, Seq(Text(nonempty=False, min_len=1)),
              msg="must be non-empty strings, got {value!r}")
        if len(set(self.options)) < 2:
            raise ConfigError("options", f"need at least 2 distinct options, got {self.options!r}")
        _SAMPLING.apply(self)


@dataclass(frozen=True)
class TurnResult:
    """What one turn returned.

    logprobs : log-softmax over the full vocabulary of each option's first token.
    text : the generated rationale.
    prompt_tokens, completion_tokens : token counts.
    reused_tokens : prompt tokens not evaluated for this request because their KV cache
        was shared with other requests or kept from the previous ``run``.
    duration_s : wall-clock seconds (see each runner for what is included).
    error : why the turn failed (then ``logprobs`` are uniform and ``text`` is empty).
    completion_ids : the rationale's token ids, when the runner decoded them itself
        (llama.cpp); empty otherwise.
    """

    logprobs: tuple[float, ...]
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reused_tokens: int = 0
    duration_s: float = 0.0
    error: str | None = None
    completion_ids: tuple[int, ...] = ()


class TurnRunner(Protocol):
    """Runs a group's turns; results come back in request order."""

    name: str
    model_id: str
    model_sha256: str

    def run(self, requests: Sequence[TurnRequest]) -> list[TurnResult]: ...


def error_result(request: TurnRequest, message: str, *, prompt_tokens: int = 0,
                 duration_s: float = 0.0) -> TurnResult:
    """A failed turn: uniform scores, no text, the reason."""
    uniform = -math.log(len(request.options))
    return TurnResult(tuple(uniform for _ in request.options), "", prompt_tokens=prompt_tokens,
                      duration_s=duration_s, error=message)


def option_logprobs(logits: np.ndarray, ids: Sequence[int]) -> tuple[float, ...]:
    """Log-softmax over the whole vocabulary, read at ``ids``.

    Computed exactly as :meth:`runtime.llama_backend.LlamaCppBackend.score_options` does,
    so equal logits give bit-identical log-probabilities.
    """
    values = np.asarray(logits).astype(np.float64)
    top = float(values.max())
    log_z = top + math.log(float(np.exp(values - top).sum()))
    return tuple(float(values[i]) - log_z for i in ids)


def sample_token(logits: np.ndarray, *, temperature: float, top_p: float, rng: np.random.Generator) -> int:
    """Draw the next token id from next-token ``logits``.

    temperature 0 is greedy: the argmax, the lowest id on ties (``rng`` is not used).
    Otherwise the softmax of ``logits / temperature`` is restricted to the smallest set
    of most likely tokens whose probability reaches ``top_p`` (ties broken by lower id),
    renormalised, and sampled with one draw from ``rng``.
    """
    values = np.asarray(logits, dtype=np.float64)
    if temperature <= 0.0:
        return int(np.argmax(values))
    z = values / temperature
    p = np.exp(z - z.max())
    p /= p.sum()
    order = np.lexsort((np.arange(p.size), -p))  # most likely first, lower id on ties
    probs = p[order]
    if top_p < 1.0:
        keep = int(np.searchsorted(np.cumsum(probs), top_p, side="left")) + 1
        order, probs = order[:keep], probs[:keep]
    cumulative = np.cumsum(probs)
    pick = int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
    return int(order[min(pick, order.size - 1)])


class SequentialTurns:
    """Turns run one after another on any backend: ``score_options`` then ``generate``.

    The generic path for backends that cannot batch.  ``top_p`` is not passed on
    (:class:`~runtime.messages.GenerationOptions` has no such field).  A
    :class:`BackendError` in one request becomes that result's ``error``; the other
    requests still run.  ``duration_s`` covers both calls of the request.
    ``reused_tokens`` is always 0 (the backend does not report sharing).
    """

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.name = f"{backend.name}/sequential"
        self.model_id = backend.model_id
        self.model_sha256 = backend.model_sha256

    def run(self, requests: Sequence[TurnRequest]) -> list[TurnResult]:
        """Score and generate each request in order."""
        return [self._one(r) for r in requests]

    def _one(self, request: TurnRequest) -> TurnResult:
        start = time.perf_counter()
        try:
            scores = self.backend.score_options(list(request.messages), list(request.options))
            reply = self.backend.generate(list(request.messages), GenerationOptions(
                temperature=request.temperature, seed=request.seed, max_tokens=request.max_tokens))
        except BackendError as exc:
            log.warning("turn failed on %s: %s", self.backend.name, exc)
            return error_result(request, str(exc), duration_s=time.perf_counter() - start)
        if len(scores.logprobs) != len(request.options):
            return error_result(request, f"backend gave {len(scores.logprobs)} scores for "
                                          f"{len(request.options)} options", duration_s=time.perf_counter() - start)
        return TurnResult(tuple(scores.logprobs), reply.text, scores.prompt_tokens or reply.prompt_tokens,
                          reply.completion_tokens, 0, time.perf_counter() - start, completion_ids=reply.token_ids)


def runner_of(backend: Backend, *, batched: bool = True, n_ctx: int | None = None, width: int = 8) -> TurnRunner:
    """The turn runner ``backend`` offers (its ``turn_runner``; see
    :meth:`runtime.backends.Backend.turn_runner` for the arguments), or the protocol's
    default, :class:`SequentialTurns`, for a backend that offers none."""
    offer = getattr(backend, "turn_runner", None)
    if offer is None:
        return SequentialTurns(backend)
    runner: TurnRunner = offer(batched=batched, n_ctx=n_ctx, width=width)
    return runner
