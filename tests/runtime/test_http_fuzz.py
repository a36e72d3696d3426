"""Malformed OpenAI-compatible server replies are clean BackendErrors (hardening defect 11).

A fake server (:mod:`tests.runtime.fake_openai_server`, 127.0.0.1, ephemeral port) answers
with fuzzed status codes and bodies: near-valid chat completions with a field replaced by
any JSON value, ``usage`` as a list, ``logprobs`` as a string, non-text content, numbers
beyond a float or the integer-digit limit, NaN / Infinity literals, nesting deeper than
the decoder allows, truncated or arbitrary text.  Every call ends in a
:class:`BackendError` with a short one-line message or a valid reply / option scores;
nothing else may leave the backend.  The default run sends 100 bodies per surface
through the socket; ``-m fuzz_large`` sends 10,000 per surface in process (urlopen
replaced) and a few hundred more through the socket.
"""
from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st

from dcem_clinical.agent import DiagnosticAgent
from runtime.backends import BackendError
from runtime.http_backend import OpenAICompatBackend
from runtime.messages import GenerationOptions, Message, Role
from tests.dcem.fuzz_support import (
    DEFAULT,
    LARGE,
    json_values,
    number_tokens,
    run_budget,
)
from tests.runtime.fake_openai_server import fake_server, in_process

LABELS = ("GERD", "NSTEMI_STEMI", "URTI")
MSGS = [Message(Role.SYSTEM, "You classify clinical cases."), Message(Role.USER, "Chest pain.\nLetter:")]
MAX_MESSAGE = 400  # URL + reason + at most ~100 characters of the body
SERVER_DEFAULT = settings(DEFAULT, max_examples=100)
SERVER_LARGE = settings(LARGE, max_examples=400)

_DEEP = "__DEEP__"
_NUM = "__NUM__"

_token = st.sampled_from(["A", " A", "\u0120B", "\u2581C", "B", "C", "D", "", " ", "AB", "a"]) | st.text(max_size=4)
_number = (st.floats(allow_nan=True, allow_infinity=True) | st.integers(-10**30, 10**30)
           | st.sampled_from([-0.1, -1.0, -2.5, -30.0, 0.0, 1e308, -1e308, 5e-324, 10 ** 400, -(10 ** 400)]))
_odd_count = st.sampled_from([None, -1, 1.5, 2.0, 1e300, float("nan"), "12", True, 10 ** 20])
_content = (st.text(max_size=40) | st.none()
            | st.just('{"predicted_label": "GERD", "probabilities": {"GERD": 0.7, "URTI": 0.3}}'))
_any = (json_values | st.sampled_from(["[]", "A", [], {}, None, "x", 1, -1.5, True, _DEEP, _NUM])
        | st.just([{"type": "text", "text": "A"}]))


@st.composite
def chat_bodies(draw: Any) -> tuple[int, bytes]:
    """A status and a body: mostly a chat completion with a few fields broken."""
    kind = draw(st.sampled_from(["doc"] * 6 + ["text", "json", "cut", "deep"]))
    status = 200 if draw(st.integers(0, 5)) else draw(st.sampled_from([400, 404, 500, 503]) | st.integers(100, 999))
    if kind == "text":
        return status, draw(st.binary(max_size=60) | st.text(max_size=60).map(str.encode))
    if kind == "json":
        return status, json.dumps(draw(json_values)).encode()
    tops = draw(st.lists(st.fixed_dictionaries({"token": _token, "logprob": _number}), max_size=6))
    first = {"token": "A", "logprob": -0.1, "top_logprobs": tops}
    logprobs: dict[str, Any] = {"content": [first]}
    message: dict[str, Any] = {"role": "assistant", "content": draw(_content)}
    choice: dict[str, Any] = {"index": 0, "message": message, "logprobs": logprobs, "finish_reason": "stop"}
    usage: dict[str, Any] = {key: draw(_odd_count) if draw(st.integers(0, 5)) == 0 else draw(st.integers(0, 5000))
                             for key in ("prompt_tokens", "completion_tokens")}
    doc: dict[str, Any] = {"id": "x", "object": "chat.completion", "choices": [choice], "usage": usage}
    places: list[tuple[dict[str, Any], str]] = [
        (doc, "usage"), (doc, "choices"), (choice, "message"), (message, "content"), (choice, "logprobs"),
        (logprobs, "content"), (first, "top_logprobs"), (usage, "prompt_tokens"), (usage, "completion_tokens")]
    places += [(t, key) for t in tops for key in ("token", "logprob")]
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2, 3]))):
        target, key = draw(st.sampled_from(places))
        if draw(st.integers(0, 4)) == 0:
            target.pop(key, None)
        else:
            target[key] = draw(_any)
    text = json.dumps(doc)
    if _NUM in text:
        text = text.replace(f'"{_NUM}"', draw(number_tokens))
    if _DEEP in text:
        depth = draw(st.sampled_from([10, 500, 999, 1000, 5000, 50_000]))
        text = text.replace(f'"{_DEEP}"', "[" * depth + "]" * depth, 1)
    if kind == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    elif kind == "deep":
        depth = draw(st.sampled_from([900, 1000, 3000, 100_000]))
        text = "{" + '"a":[' * depth + "1" + "]" * depth + "}"
    return status, text.encode("utf-8")


def _clean(exc: BackendError) -> str:
    message = str(exc)
    assert "\n" not in message and 0 < len(message) <= MAX_MESSAGE, message
    return "error"


def _check_generate(backend: OpenAICompatBackend) -> Any:
    def check(_: Any) -> str:
        try:
            reply = backend.generate(MSGS, GenerationOptions(max_tokens=8))
        except BackendError as exc:
            return _clean(exc)
        assert isinstance(reply.text, str)
        assert isinstance(reply.prompt_tokens, int) and reply.prompt_tokens >= 0
        assert isinstance(reply.completion_tokens, int) and reply.completion_tokens >= 0
        return "valid"
    return check


def _check_scores(backend: OpenAICompatBackend) -> Any:
    agent = DiagnosticAgent(backend, LABELS)

    def check(_: Any) -> str:
        try:
            scores = backend.score_options(MSGS, ["A", "B", "C"])
        except BackendError as exc:
            return _clean(exc)
        assert len(scores.logprobs) == 3
        assert all(math.isfinite(v) and v <= 0 for v in scores.logprobs), scores.logprobs
        assert isinstance(scores.prompt_tokens, int) and scores.prompt_tokens >= 0
        try:  # the same reply through the agent: a label from the set, a finite vector summing to 1
            report = agent.classify("case")
        except BackendError as exc:
            return _clean(exc)
        assert 0 <= report.label < len(LABELS)
        assert all(math.isfinite(p) and p >= 0 for p in report.probabilities)
        assert math.isclose(float(report.probabilities.sum()), 1.0, abs_tol=1e-9)
        return "valid"
    return check


def _through_server(surface: str, checker: Any, budget: settings) -> None:
    with fake_server() as server:
        backend = OpenAICompatBackend(server.url, "m", timeout=5)
        check = checker(backend)

        def send(reply: tuple[int, bytes]) -> str:
            server.reply = reply
            return check(reply)

        counts = run_budget(surface, chat_bodies(), send, budget)
        assert server.requests >= counts["inputs"]


def _in_process(surface: str, checker: Any, budget: settings) -> None:
    backend = OpenAICompatBackend("http://fake.invalid:1", "m", timeout=5)
    check = checker(backend)
    current: list[tuple[int, bytes]] = [(200, b"{}")]

    def send(reply: tuple[int, bytes]) -> str:
        current[0] = reply
        return check(reply)

    with in_process(lambda: current[0]):
        run_budget(surface, chat_bodies(), send, budget)


def test_defect11_fuzzed_server_replies_to_generate() -> None:
    _through_server("http generate (server)", _check_generate, SERVER_DEFAULT)


def test_defect11_fuzzed_server_replies_to_score_options() -> None:
    _through_server("http score_options (server)", _check_scores, SERVER_DEFAULT)


@pytest.mark.fuzz_large
@pytest.mark.parametrize("checker", [_check_generate, _check_scores], ids=["generate", "score_options"])
def test_defect11_fuzzed_server_replies_large(checker: Any, request: pytest.FixtureRequest) -> None:
    name = request.node.callspec.id
    _in_process(f"http {name} (in process)", checker, LARGE)
    _through_server(f"http {name} (server, large)", checker, SERVER_LARGE)


@pytest.mark.parametrize("body, words", [
    ({"choices": [{"message": {"content": "A"}}], "usage": [1, 2]}, "'usage' as a JSON list"),
    ({"choices": [{"message": {"content": "A"}}], "usage": {"prompt_tokens": "12"}}, "not a number"),
    ({"choices": [{"message": {"content": "A"}}], "usage": {"prompt_tokens": 1e300}}, "out of range"),
    ({"choices": [{"message": {"content": "A"}}], "usage": {"completion_tokens": 2.5}}, "not a whole number"),
    ({"choices": [{"message": {"content": ["A"]}}]}, "non-text content"),
    ({"choices": [{"message": {"content": {"text": "A"}}}]}, "non-text content"),
    ({"choices": [{"message": "A"}]}, "without choices\\[0\\].message"),
    ({"choices": {"0": {}}}, "without choices"),
    ({"choices": [{"message": {"content": "A"}}], "usage": {"prompt_tokens": float("nan")}}, "not a whole number"),
])
def test_defect11_malformed_generate_replies_are_backend_errors(body: dict[str, Any], words: str) -> None:
    with fake_server() as server:
        server.reply = (200, json.dumps(body).encode())
        with pytest.raises(BackendError, match=words) as info:
            OpenAICompatBackend(server.url, "m", timeout=5).generate(MSGS, GenerationOptions())
    assert "\n" not in str(info.value)


_TOP = [{"token": "A", "logprob": -0.5}]


@pytest.mark.parametrize("body, words", [
    ('{"choices": [{"logprobs": "A: -0.1"}]}', "'logprobs' as a JSON str"),
    ('{"choices": [{"logprobs": [1, 2]}]}', "'logprobs' as a JSON list"),
    ('{"choices": [{"logprobs": {"content": [{"top_logprobs": [{"token": ["A"], "logprob": -1}]}]}}]}',
     "malformed top_logprobs entry"),
    ('{"choices": [{"logprobs": {"content": [{"top_logprobs": [{"token": "A", "logprob": "-1"}]}]}}]}',
     "malformed top_logprobs entry"),
    ('{"choices": [{"logprobs": {"content": [{"top_logprobs": [{"token": "A", "logprob": NaN}]}]}}]}',
     "no finite top logprobs"),
    ('{"choices": [{"logprobs": {"content": [{"top_logprobs": [{"token": "A", "logprob": -1e999}]}]}}]}',
     "no finite top logprobs"),
    ('{"choices": [{"logprobs": {"content": [{"top_logprobs": [{"token": "A", "logprob": -' + "9" * 400
     + "}]}]}}]}", "no finite top logprobs"),
    ('{"choices": [{"logprobs": {"content": [{"top_logprobs": [{"token": "A", "logprob": -' + "9" * 5000
     + "}]}]}}]}", "malformed JSON"),
    ('{"choices": [{"logprobs": {"content": [{"top_logprobs": ' + "[" * 5000 + "]" * 5000 + "}]}}]}",
     "nested too deeply"),
    ('{"choices": [{"logprobs": {"content": [{"top_logprobs": [1, 2]}]}}], "usage": [1]}',
     "malformed top_logprobs entry"),
    (json.dumps({"choices": [{"logprobs": {"content": [{"top_logprobs": _TOP}]}}], "usage": "many"}),
     "'usage' as a JSON str"),
])
def test_defect11_malformed_score_replies_are_backend_errors(body: str, words: str) -> None:
    with fake_server() as server:
        server.reply = (200, body.encode())
        with pytest.raises(BackendError, match=words) as info:
            OpenAICompatBackend(server.url, "m", timeout=5).score_options(MSGS, ["A", "B"])
    message = str(info.value)
    assert "\n" not in message and len(message) <= MAX_MESSAGE


def test_defect11_error_messages_quote_at_most_about_100_characters_of_the_body() -> None:
    with fake_server() as server:
        backend = OpenAICompatBackend(server.url, "m", timeout=5)
        for status, body in [(200, "x" * 10_000), (500, '{"error": {"message": "' + "y" * 10_000 + '"}}'),
                             (200, json.dumps({"choices": [{"message": {"content": ["z" * 10_000]}}]})),
                             (200, json.dumps({"choices": "w" * 10_000}))]:
            server.reply = (status, body.encode())
            with pytest.raises(BackendError) as info:
                backend.generate(MSGS, GenerationOptions())
            message = str(info.value)
            assert "\n" not in message and max(message.count(c) for c in "xyzw") <= 100, message


def test_defect11_a_valid_reply_still_parses() -> None:
    with fake_server() as server:
        backend = OpenAICompatBackend(server.url, "m", timeout=5)
        server.reply = (200, json.dumps({"choices": [{"message": {"content": "B"}}],
                                         "usage": {"prompt_tokens": 12, "completion_tokens": 1.0}}).encode())
        reply = backend.generate(MSGS, GenerationOptions())
        assert (reply.text, reply.prompt_tokens, reply.completion_tokens) == ("B", 12, 1)
        tops = [{"token": " A", "logprob": -0.2}, {"token": "\u0120B", "logprob": -1.9}, {"token": "x", "logprob": -5}]
        server.reply = (200, json.dumps({"choices": [{"logprobs": {"content": [{"top_logprobs": tops}]}}],
                                         "usage": None}).encode())
        scores = backend.score_options(MSGS, ["A", "B", "C"])
        assert scores.logprobs == pytest.approx((-0.2, -1.9, -5 - math.log(20)))
