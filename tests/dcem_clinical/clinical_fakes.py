"""Scripted models for the clinical runner tests: informative, anchored and broken ones."""
from __future__ import annotations

import math
import zlib
from typing import Sequence

from clinical.datasets import load_dataset
from runtime.backends import BackendError
from runtime.messages import Message
from runtime.testing import ScriptedBackend

_TRUTH: dict[str, dict[str, int]] = {}


def truth_of(dataset: str) -> dict[str, int]:
    """Case text -> true label index of a shipped dataset."""
    if dataset not in _TRUTH:
        _TRUTH[dataset] = {c.text.strip(): c.label for c in load_dataset(dataset).cases}
    return _TRUTH[dataset]


def _case_text(messages: Sequence[Message]) -> str:
    user = messages[-1].content
    return user.split("Case:\n", 1)[1].split("\n\nNote from the mediator", 1)[0].split(
        "\n\nAnswer with", 1)[0].strip()


def oracle_backend(dataset: str, *, skill: float = 0.7, anchor: int | None = None, tag: str = "a",
                   too_long: int | None = None) -> ScriptedBackend:
    """A fake model that knows the truth with weight ``skill``; an anchored role (any
    system prompt naming a walk-in clinic or a gastroenterologist) pulls to ``anchor``;
    a steer note pulls a little to the named alternative; texts longer than ``too_long``
    characters fail like a context overflow."""
    table = truth_of(dataset)

    def scores(messages: Sequence[Message], options: Sequence[str]) -> list[float]:
        text = _case_text(messages)
        if too_long is not None and len(text) > too_long:
            raise BackendError(f"prompt of {len(text)} characters exceeds the context")
        k = len(options)
        probs = [(1.0 - skill) / k] * k
        truth = table.get(text)
        if truth is not None and zlib.crc32(text.encode()) % 10 < 8:
            probs[truth] += skill
        else:
            probs[(len(text) % k)] += skill
        system = messages[0].content
        if anchor is not None and ("walk-in clinic" in system or "gastroenterologist" in system):
            probs[anchor] += 1.5 * skill
        return [math.log(p) for p in probs]

    return ScriptedBackend(["- finding one\n- finding two"], scores=scores, model_id=f"oracle-{tag}",
                           model_sha256=tag * 64)
