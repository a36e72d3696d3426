"""Shared pieces of the fuzz tests: input strategies, budgets, outcome checks and counts.

Every fuzzed surface must end in either a clean, specific error (a
:class:`common.errors.ProjectError`; on the command line one ``error:`` line on stderr and
exit status 2) or a finite, valid result (strict JSON, labels from the label set).
Anything else -- a traceback -- fails the test.  ``COUNTS`` tallies the outcomes of
every input tried so the large budget (``-m fuzz_large -s``) can report them.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any, Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dcem.core.config import MediatorConfig

__all__ = ["DEFAULT", "LARGE", "COUNTS", "run_budget", "reject", "check_result", "json_values",
           "episodes", "episode_texts", "number_tokens", "nest", "VALID_PARAMS", "KNOWN_PARAMS"]

_COMMON: dict[str, Any] = dict(deadline=None, database=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much])
DEFAULT = settings(max_examples=250, derandomize=True, **_COMMON)
LARGE = settings(max_examples=10_000, derandomize=False, **_COMMON)

COUNTS: dict[str, Counter[str]] = {}

HUGE = "1" + "0" * 400
LONG = "7" * 5000
KNOWN_PARAMS = sorted(MediatorConfig().to_dict())


def reject(name: str) -> Any:
    raise AssertionError(f"non-finite number {name} in the output")


def nest(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


def run_budget(surface: str, strategy: st.SearchStrategy[Any], check: Callable[[Any], str],
               budget: settings) -> Counter[str]:
    """Feed ``budget`` inputs from ``strategy`` to ``check`` (which returns "error" or
    "valid" and raises on anything else); return and print the outcome counts."""
    counts = COUNTS.setdefault(surface, Counter())

    @budget
    @given(strategy)
    def one(value: Any) -> None:
        counts["inputs"] += 1
        try:
            outcome = check(value)
        except Exception:
            counts["tracebacks"] += 1
            raise
        counts[outcome] += 1

    one()
    print(f"\nfuzz {surface}: {counts['inputs']} inputs, {counts['error']} clean errors, "
          f"{counts['valid']} valid results, {counts['tracebacks']} tracebacks")
    assert counts["tracebacks"] == 0
    return counts


def _labels_in(result: dict[str, Any], labels: list[str], n_agents: int) -> None:
    allowed = set(labels)
    for r in result["rounds"]:
        assert r["decision"] in allowed and r["runner_up"] in allowed and r["runner_up"] != r["decision"]
        assert set(r["dangerous_miss"]) <= allowed and len(r["dangerous_miss"]) == n_agents
        if r["steer"] is not None:
            assert r["steer"]["current"] in allowed and r["steer"]["alternative"] in allowed
            assert 0 <= r["steer"]["agent"] < n_agents
    assert result["outcome"]["decision"] in allowed


def check_result(text: str, labels: list[str], n_agents: int) -> None:
    """``text`` is strict JSON (no NaN/Infinity) and every label in it is known."""
    result = json.loads(text, parse_constant=reject)
    assert result["rounds"] and result["outcome"]["rounds"] == len(result["rounds"])
    _labels_in(result, labels, n_agents)


# ---------------------------------------------------------------- strategies

number_tokens = st.sampled_from([
    "NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1e308", "1e-400", "4.9e-324", HUGE,
    "-" + HUGE, LONG, "9" * 4301, "9" * 309, "1" * 300, "-0", "0.0", '"0.9"', '"1"', "true",
    "false", "null", "[]", "{}", "1e6", "1000001", "100001", "1e-300", "0.5",
])

_leaves = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
           | st.sampled_from(["uniform", "empirical", "0.9", "MI", "a"]))
json_values = st.recursive(
    _leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)

_extreme = st.sampled_from([1e-200, 1e-320, 5e-324, 0.0, -0.1, 1.0, 1e308, float("nan"), float("inf"),
                            10 ** 400, True, "0.5", None, [0.5]])


@st.composite
def _row(draw: Any, k: int, extreme: bool) -> list[Any]:
    """A probability row: usually positive and normalised, sometimes with extremes."""
    weights = draw(st.lists(st.integers(1, 50), min_size=k, max_size=k))
    row: list[Any] = [w / sum(weights) for w in weights]
    if extreme and draw(st.integers(0, 3)) == 0:
        i = draw(st.integers(0, k - 1))
        tiny = draw(st.sampled_from([1e-200, 1e-320, 5e-324, 1e-300]))
        row = [tiny] * k
        row[i] = 1.0 - tiny * (k - 1)
    if extreme and draw(st.integers(0, 15)) == 0:
        row[draw(st.integers(0, k - 1))] = draw(_extreme)
    return row


VALID_PARAMS = {
    "alpha": st.floats(0, 1e6), "beta": st.floats(0, 1e6), "gamma": st.floats(0, 1e6),
    "lambda_pool": st.floats(0, 1e6), "rho_min": st.floats(1e-300, 0.99), "omega_min": st.floats(0, 0.5),
    "eps_safe": st.floats(0, 1), "eps_low": st.floats(1, 1e9), "m_safe": st.floats(0, 2),
    "delta": st.floats(-1, 2), "window": st.integers(1, 20), "s_asym": st.floats(0, 5),
    "t_max": st.integers(1, 100_000), "steer_gate": st.sampled_from(["risk", "reliability_gap"]),
    "escalation": st.booleans(),
}
_param_value = st.one_of(
    st.floats(), st.integers(),
    st.sampled_from([1e6, 1e7, 1e308, 100_000, 100_001, 0, -1, 0.5, 2.0, "0.9", "uniform", "risk",
                     "reliability_gap", "entropy", True, False, None, 10 ** 400]),
    json_values)


@st.composite
def _params(draw: Any) -> dict[str, Any]:
    keys = draw(st.lists(st.sampled_from(sorted(VALID_PARAMS)), max_size=4, unique=True))
    params = {key: draw(VALID_PARAMS[key]) for key in keys}
    if draw(st.integers(0, 3)) == 0:  # any value under any key, known or not
        params[draw(st.sampled_from(KNOWN_PARAMS + ["bogus"]))] = draw(_param_value)
    if "eps_safe" in params and "eps_low" not in params and draw(st.booleans()):
        params["eps_low"] = 10.0
    return params


@st.composite
def _loss(draw: Any, k: int) -> list[list[Any]]:
    grid = st.sampled_from([0, 1, 2, 5, 0.5, 10])
    loss: list[list[Any]] = [[0 if d == y else draw(grid) for y in range(k)] for d in range(k)]
    if draw(st.integers(0, 6)) == 0:
        loss[draw(st.integers(0, k - 1))][draw(st.integers(0, k - 1))] = draw(
            _extreme | st.floats(0, 1e13) | st.sampled_from([1e12, 1e12 + 1e6]))
    return loss


@st.composite
def _reports(draw: Any, labels: list[str], n_agents: int) -> list[list[Any]]:
    n = draw(st.sampled_from([1, 2, 3, 5, 8, 12, 40, 200]))
    pick = st.sampled_from(labels)
    rounds = [[draw(pick) for _ in range(n_agents)] for _ in range(n)]
    if draw(st.integers(0, 10)) == 0:
        rounds[draw(st.integers(0, n - 1))][0] = draw(_leaves | st.just("??"))
    return rounds


@st.composite
def episodes(draw: Any, deep: bool = False) -> dict[str, Any]:
    """An explain document: mostly near-valid, with extreme numbers and mutations."""
    k = draw(st.integers(2, 4))
    n_agents = draw(st.integers(1, 3))
    labels = draw(st.sampled_from([["MI", "GERD", "URTI", "PE"][:k], [f"l{i}" for i in range(k)]])
                  | st.lists(st.text(min_size=1, max_size=3), min_size=k, max_size=k, unique=True))
    extreme = draw(st.booleans())
    doc: dict[str, Any] = {
        "labels": labels,
        "confusion": [[draw(_row(k, extreme)) for _ in range(k)] for _ in range(n_agents)],
        "prior": draw(st.just("uniform") | _row(k, extreme)),
        "loss": draw(_loss(k)),
        "reports": draw(_reports(labels, n_agents)),
        "params": draw(_params()),
    }
    mutations = draw(st.integers(1, 2)) if draw(st.integers(0, 4)) == 0 else 0
    for _ in range(mutations):
        op = draw(st.sampled_from(["replace", "drop", "add", "nest"] if deep else ["replace", "drop", "add"]))
        key = draw(st.sampled_from(sorted(doc) + ["extra"]))
        if op == "drop":
            doc.pop(key, None)
        elif op == "add" or op == "replace":
            doc[key] = draw(json_values | _extreme)
        else:
            doc[key] = nest(doc.get(key, 0.5), draw(st.integers(1, 3000)))
    return doc


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


@st.composite
def episode_texts(draw: Any) -> str:
    """Text for ``explain FILE``: a dumped episode, maybe with a token swapped for an
    extreme number literal, deep nesting, truncation -- or arbitrary text."""
    kind = draw(st.sampled_from(["episode", "episode", "episode", "token", "deep", "cut", "text", "json"]))
    if kind == "text":
        return draw(st.text(max_size=60))
    if kind == "json":
        return json.dumps(draw(json_values))
    text = json.dumps(draw(episodes()))
    if kind == "token":
        spans = [m.span() for m in _NUMBER.finditer(text)]
        if spans:
            a, b = spans[draw(st.integers(0, len(spans) - 1))]
            text = text[:a] + draw(number_tokens) + text[b:]
    elif kind == "deep":
        depth = draw(st.sampled_from([60, 65, 200, 999, 1000, 5000, 50_000]))
        text = text.replace('"uniform"', "[" * depth + "]" * depth, 1) if draw(st.booleans()) \
            else "[" * depth + text + "]" * depth
    elif kind == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    return text
