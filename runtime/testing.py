"""Test double: a scripted fake model for tests and demos that must not load weights.

It is not a model: replies and option scores come from a script, and every call is
remembered so tests can count them.  Production code never constructs it.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

from runtime.backends import BackendError
from runtime.messages import GenerationOptions, Message, OptionScores, Reply

__all__ = ["ScriptedBackend", "Script"]

Script = Callable[[Sequence[Message]], str]


class ScriptedBackend:
    """A deterministic fake model (test double).

    replies : a list consumed in order (cycled when exhausted) or a function of the
        messages returning the reply text.
    scores : a function of the messages returning one log-probability per option, or
        None for uniform scores.
    """

    name = "scripted"

    def __init__(self, replies: Sequence[str] | Script = ("",), *,
                 scores: Callable[[Sequence[Message], Sequence[str]], Sequence[float]] | None = None,
                 model_id: str = "scripted-model", model_sha256: str = "0" * 64) -> None:
        self._replies = replies
        self._scores = scores
        self.model_id = model_id
        self.model_sha256 = model_sha256
        self.calls: list[tuple[str, tuple[Message, ...]]] = []

    def generate(self, messages: Sequence[Message], options: GenerationOptions) -> Reply:
        self.calls.append(("generate", tuple(messages)))
        if callable(self._replies):
            text = self._replies(messages)
        else:
            text = self._replies[(len([c for c in self.calls if c[0] == "generate"]) - 1) % len(self._replies)]
        return Reply(text=text, prompt_tokens=sum(len(m.content.split()) for m in messages),
                     completion_tokens=len(text.split()))

    def score_options(self, messages: Sequence[Message], options: Sequence[str]) -> OptionScores:
        self.calls.append(("score", tuple(messages)))
        if self._scores is None:
            values = [-math.log(len(options))] * len(options)
        else:
            values = [float(v) for v in self._scores(messages, options)]
        if len(values) != len(options):
            raise BackendError(f"scripted scores gave {len(values)} values for {len(options)} options")
        return OptionScores(tuple(values), prompt_tokens=sum(len(m.content.split()) for m in messages))
