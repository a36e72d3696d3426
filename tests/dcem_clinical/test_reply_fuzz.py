"""Fuzzed model replies: JSON-mode text and scored-mode log-probabilities.

``parse_json_reply`` either raises ValueError with a reason or returns a label from the
set and a finite vector summing to 1.  ``DiagnosticAgent.classify`` over a scripted backend
(:class:`runtime.testing.ScriptedBackend`) returning fuzzed text and fuzzed
log-probabilities either raises :class:`BackendError` (a failed call for the panel) or
returns a report whose label is in the set and whose vector is finite and sums to 1; an
unparseable JSON reply is a recorded error in the report.  Default run: a fixed small
budget; ``-m fuzz_large``: 10,000 inputs per surface.
"""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st

from dcem_clinical.agent import DiagnosticAgent, parse_json_reply
from runtime.backends import BackendError
from runtime.testing import ScriptedBackend
from tests.dcem.fuzz_support import (
    DEFAULT,
    LARGE,
    json_values,
    number_tokens,
    run_budget,
)

LABELS = ("Anaphylaxis", "GERD", "URTI")
SMALL = settings(DEFAULT, max_examples=300)

_prob = (st.floats(allow_nan=True, allow_infinity=True) | st.integers(-10**30, 10**30)
         | st.sampled_from([0, 0.0, -0.0, 1, 0.5, 1e308, 5e-324, 1e-320, 10**400, "0.5", True, None, [0.5]]))


@st.composite
def json_replies(draw: Any) -> str:
    """A JSON-mode reply: mostly the expected object with fuzzed fields, sometimes a
    number token swapped for an extreme literal, deep nesting, truncation or any text."""
    kind = draw(st.sampled_from(["doc"] * 5 + ["token", "deep", "cut", "text", "json"]))
    if kind == "text":
        return draw(st.text(max_size=80))
    if kind == "json":
        return json.dumps(draw(json_values))
    label = draw(st.sampled_from(LABELS) | st.sampled_from(LABELS) | st.sampled_from(["gerd", "", "Other"])
                 | json_values)
    names = st.sampled_from(LABELS) | st.text(max_size=5)
    good = st.fixed_dictionaries({name: st.floats(0, 1) for name in LABELS})
    probs = draw(good | good | st.dictionaries(names, _prob, max_size=5) | json_values)
    doc: dict[str, Any] = {"predicted_label": label, "probabilities": probs}
    if draw(st.integers(0, 5)) == 0:
        doc.pop(draw(st.sampled_from(sorted(doc))))
    text = json.dumps(doc)
    if kind == "token":
        at = [i for i, ch in enumerate(text) if ch.isdigit()]
        if at:
            i = draw(st.sampled_from(at))
            j = i
            while j < len(text) and (text[j].isdigit() or text[j] in ".eE+-"):
                j += 1
            text = text[:i] + draw(number_tokens) + text[j:]
    elif kind == "deep":
        depth = draw(st.sampled_from([100, 999, 1000, 5000, 100_000]))
        text = text[:-1] + ', "x": ' + "[" * depth + "]" * depth + "}"
    elif kind == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    return text


_logprob = (st.floats(allow_nan=True, allow_infinity=True)
            | st.floats(-50, 0) | st.sampled_from([0.0, -0.0, -1e308, 1e308, -5e-324, float("-inf"), float("nan")]))
logprob_lists = st.lists(_logprob, min_size=3, max_size=3)


def _valid(label: int, probs: np.ndarray) -> str:
    assert 0 <= label < len(LABELS)
    assert probs.shape == (len(LABELS),) and np.isfinite(probs).all() and (probs >= 0).all()
    assert math.isclose(float(probs.sum()), 1.0, abs_tol=1e-9)
    return "valid"


def _check_parse(text: str) -> str:
    try:
        label, probs = parse_json_reply(text, list(LABELS))
    except ValueError as exc:
        assert str(exc) and "\n" not in str(exc)
        return "error"
    return _valid(label, probs)


def _check_json_mode(case: tuple[str, list[float]]) -> str:
    text, logprobs = case
    agent = DiagnosticAgent(ScriptedBackend([text], scores=lambda m, o: logprobs), LABELS, mode="json")
    try:
        report = agent.classify("burning chest pain after meals")
    except BackendError as exc:  # the scored fallback had unusable log-probabilities
        assert "unusable log-probabilities" in str(exc)
        return "error"
    _valid(report.label, report.probabilities)
    if report.error is not None:  # a recorded error: the reply was unusable, the fallback answered
        assert report.error.startswith("unparseable reply")
        return "error"
    return "valid"


def _check_scored_mode(logprobs: list[float]) -> str:
    agent = DiagnosticAgent(ScriptedBackend(scores=lambda m, o: logprobs), LABELS)
    try:
        report = agent.classify("burning chest pain after meals")
    except BackendError as exc:
        assert "unusable log-probabilities" in str(exc) and "\n" not in str(exc)
        return "error"
    assert report.error is None
    return _valid(report.label, report.probabilities)


SURFACES = {
    "clinical parse_json_reply": (json_replies(), _check_parse),
    "clinical classify json mode": (st.tuples(json_replies(), logprob_lists), _check_json_mode),
    "clinical classify scored mode": (logprob_lists, _check_scored_mode),
}


@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_fuzzed_model_replies(surface: str) -> None:
    strategy, check = SURFACES[surface]
    run_budget(surface, strategy, check, SMALL)


@pytest.mark.fuzz_large
@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_fuzzed_model_replies_large(surface: str) -> None:
    strategy, check = SURFACES[surface]
    run_budget(surface + " (large)", strategy, check, LARGE)
