"""Typed chat messages and model replies shared by every backend."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable

__all__ = ["Role", "Message", "GenerationOptions", "Reply", "OptionScores"]


class Role(str, Enum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"


@dataclass(frozen=True)
class Message:
    role: Role
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role.value, "content": self.content}


@dataclass(frozen=True)
class GenerationOptions:
    """Sampling options; part of every cache key.

    temperature 0 means greedy decoding; ``json_schema`` asks the backend for JSON that
    follows the schema (when it supports constrained decoding).  ``until`` is a hint, not
    part of the cache key: a backend that decodes token by token may stop as soon as
    ``until(text so far)`` is true (the caller must read the same answer from that text
    as from the whole reply); other backends return the whole reply.
    """

    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 256
    json_schema: dict[str, Any] | None = None
    until: Callable[[str], bool] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        from common.errors import ConfigError

        if not 0.0 <= self.temperature <= 5.0:
            raise ConfigError("temperature", f"must lie in [0, 5], got {self.temperature}")
        if self.max_tokens < 1:
            raise ConfigError("max_tokens", f"must be >= 1, got {self.max_tokens}")

    def to_dict(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens,
                "json_schema": self.json_schema}


@dataclass(frozen=True)
class Reply:
    """What a backend returned for one call."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    duration_s: float = 0.0
    raw: dict[str, Any] = field(default_factory=dict)
    token_ids: tuple[int, ...] = ()
    """The generated tokens, when the backend decodes them itself (llama.cpp's reusing path)."""


@dataclass(frozen=True)
class OptionScores:
    """Next-token log-probabilities of a fixed list of option tokens (one forward pass)."""

    logprobs: tuple[float, ...]
    prompt_tokens: int = 0
    duration_s: float = 0.0
