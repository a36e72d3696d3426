"""The scripted backend and the message types."""
from __future__ import annotations

import math

import pytest

from common.errors import ConfigError
from runtime.backends import BackendError
from runtime.messages import GenerationOptions, Message, Role
from runtime.testing import ScriptedBackend


def test_scripted_replies_cycle_and_calls_are_recorded() -> None:
    backend = ScriptedBackend(["first", "second"])
    msgs = [Message(Role.SYSTEM, "be brief"), Message(Role.USER, "hello there")]
    texts = [backend.generate(msgs, GenerationOptions()).text for _ in range(3)]
    assert texts == ["first", "second", "first"]
    assert len(backend.calls) == 3 and backend.calls[0][1] == tuple(msgs)
    assert backend.generate(msgs, GenerationOptions()).prompt_tokens == 4


def test_scripted_scores_default_to_uniform_and_must_match_the_options() -> None:
    backend = ScriptedBackend()
    scores = backend.score_options([Message(Role.USER, "x")], ["A", "B", "C", "D"])
    assert scores.logprobs == pytest.approx((-math.log(4),) * 4)
    bad = ScriptedBackend(scores=lambda m, o: [0.0])
    with pytest.raises(BackendError, match="1 values for 2 options"):
        bad.score_options([Message(Role.USER, "x")], ["A", "B"])
    fn = ScriptedBackend(lambda msgs: msgs[-1].content.upper())
    assert fn.generate([Message(Role.USER, "abc")], GenerationOptions()).text == "ABC"


def test_options_are_validated_and_serialisable() -> None:
    with pytest.raises(ConfigError) as info:
        GenerationOptions(temperature=-1)
    assert info.value.field == "temperature"
    with pytest.raises(ConfigError):
        GenerationOptions(max_tokens=0)
    assert GenerationOptions(seed=3).to_dict()["seed"] == 3
    assert Message(Role.USER, "hi").to_dict() == {"role": "user", "content": "hi"}
