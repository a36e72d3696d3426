"""Agent turns without a model: requests, the sequential runner and the shared sampler."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pytest

from common.errors import ConfigError
from runtime.backends import BackendError
from runtime.messages import Message, Role
from runtime.testing import ScriptedBackend
from runtime.turns import (SequentialTurns, TurnRequest, TurnResult, error_result, option_logprobs,
                           sample_token)

OPTIONS = ("A", "B", "C")


def _request(text: str, **kwargs: object) -> TurnRequest:
    return TurnRequest((Message(Role.SYSTEM, "Answer with a letter."), Message(Role.USER, text)), OPTIONS,
                       **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs, field", [
    ({"options": ("A",)}, "options"),
    ({"options": ("A", "A")}, "options"),
    ({"options": ("A", "")}, "options"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"max_tokens": True}, "max_tokens"),
    ({"temperature": -0.1}, "temperature"),
    ({"temperature": 5.5}, "temperature"),
    ({"top_p": 0.0}, "top_p"),
    ({"top_p": 1.2}, "top_p"),
    ({"messages": ()}, "messages"),
])
def test_requests_are_validated(kwargs: dict[str, object], field: str) -> None:
    fields: dict[str, object] = {"messages": (Message(Role.USER, "Which?"),), "options": OPTIONS, "max_tokens": 8}
    fields.update(kwargs)
    with pytest.raises(ConfigError) as err:
        TurnRequest(**fields)  # type: ignore[arg-type]
    assert err.value.field == field


def test_requests_store_tuples_and_failed_results_are_uniform() -> None:
    request = TurnRequest([Message(Role.USER, "Which?")], ["A", "B"], max_tokens=4)  # type: ignore[arg-type]
    assert isinstance(request.messages, tuple) and request.options == ("A", "B")
    failed = error_result(request, "server down", prompt_tokens=7)
    assert failed.logprobs == (-math.log(2), -math.log(2)) and failed.text == "" and failed.error == "server down"
    assert failed.prompt_tokens == 7 and failed.completion_tokens == 0 and failed.reused_tokens == 0


def test_sequential_turns_score_then_generate_in_request_order() -> None:
    def scores(messages: Sequence[Message], options: Sequence[str]) -> list[float]:
        top = "B" if "cough" in messages[-1].content else "A"
        return [math.log(0.8) if o == top else math.log(0.1) for o in options]

    backend = ScriptedBackend(lambda messages: f"because {messages[-1].content.split()[0]}", scores=scores)
    runner = SequentialTurns(backend)
    assert runner.name == "scripted/sequential" and runner.model_id == "scripted-model"
    results = runner.run([_request("chest pain", max_tokens=5), _request("cough and fever", temperature=0.5)])
    assert [r.error for r in results] == [None, None]
    assert [int(np.argmax(r.logprobs)) for r in results] == [0, 1]
    assert [r.text for r in results] == ["because chest", "because cough"]
    assert all(isinstance(r, TurnResult) and r.reused_tokens == 0 and r.duration_s >= 0 for r in results)
    assert [kind for kind, _ in backend.calls] == ["score", "generate", "score", "generate"]


def test_one_failing_request_does_not_stop_the_others() -> None:
    def scores(messages: Sequence[Message], options: Sequence[str]) -> list[float]:
        if "bad" in messages[-1].content:
            raise BackendError("model unreachable")
        return [0.0, -1.0, -2.0]

    runner = SequentialTurns(ScriptedBackend(["fine"], scores=scores))
    good, bad, wrong = runner.run([_request("good"), _request("bad"), TurnRequest(
        (Message(Role.USER, "two options"),), ("A", "B"), max_tokens=3)])
    assert good.error is None and good.text == "fine" and good.logprobs == (0.0, -1.0, -2.0)
    assert bad.error == "model unreachable" and bad.text == "" and bad.logprobs == (-math.log(3),) * 3
    assert wrong.error is not None and "for 2 options" in wrong.error


def test_option_logprobs_are_a_log_softmax_over_the_whole_vocabulary() -> None:
    logits = np.array([2.0, 0.5, -1.0, 3.0, 0.0], dtype=np.float32)
    values = option_logprobs(logits, [3, 0])
    full = logits.astype(np.float64) - np.log(np.exp(logits.astype(np.float64)).sum())
    assert values == pytest.approx((full[3], full[0]), abs=1e-12)
    assert sum(math.exp(v) for v in option_logprobs(logits, range(5))) == pytest.approx(1.0)


def test_greedy_sampling_is_the_argmax_with_the_lowest_id_on_ties() -> None:
    rng = np.random.default_rng(0)
    assert sample_token(np.array([1.0, 3.0, 3.0, 0.0]), temperature=0.0, top_p=1.0, rng=rng) == 1
    assert sample_token(np.array([0.0, -1.0, 4.0]), temperature=0.0, top_p=0.1, rng=rng) == 2
    assert rng.random() == np.random.default_rng(0).random()  # greedy decoding draws nothing


def test_seeded_sampling_is_deterministic() -> None:
    logits = np.log(np.array([0.4, 0.3, 0.2, 0.1]))

    def draws(seed: int) -> list[int]:
        rng = np.random.default_rng(seed)
        return [sample_token(logits, temperature=1.0, top_p=1.0, rng=rng) for _ in range(50)]

    assert draws(7) == draws(7)
    assert draws(7) != draws(8)


def test_top_p_keeps_the_smallest_set_reaching_the_mass() -> None:
    logits = np.log(np.array([0.05, 0.5, 0.3, 0.15]))
    rng = np.random.default_rng(1)
    seen = {sample_token(logits, temperature=1.0, top_p=0.7, rng=rng) for _ in range(400)}
    assert seen == {1, 2}
    assert {sample_token(logits, temperature=1.0, top_p=0.5, rng=rng) for _ in range(50)} == {1}
    everything = {sample_token(logits, temperature=1.0, top_p=1.0, rng=rng) for _ in range(2000)}
    assert everything == {0, 1, 2, 3}


@pytest.mark.parametrize("temperature", [0.5, 1.0, 3.0])
def test_temperature_scales_the_sampling_distribution(temperature: float) -> None:
    logits = np.array([0.0, 1.0, 2.0])
    rng = np.random.default_rng(3)
    n = 6000
    counts = np.bincount([sample_token(logits, temperature=temperature, top_p=1.0, rng=rng) for _ in range(n)],
                         minlength=3)
    expected = np.exp(logits / temperature) / np.exp(logits / temperature).sum()
    assert counts / n == pytest.approx(expected, abs=0.025)
