"""Fuzz tests of the ``--param KEY=VALUE`` values of ``python -m dcem run synthetic``.

Each input is a list of ``--param`` items.  :func:`dcem.cli.base_config` (the exact
parsing ``run synthetic`` does before it opens the store) must refuse it with a
ProjectError or return a config whose every quantity stays finite on an extreme episode;
a refused input must also make ``main(["run", "synthetic", ...])`` print one line and
exit 2.  ``pytest -m fuzz_large -s`` tries 10,000 inputs and prints the counts.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st

from dcem.analysis.explain import explain_episode, parse_episode
from dcem.cli import base_config, main
from common.errors import ProjectError
from tests.dcem.fuzz_support import (
    DEFAULT,
    KNOWN_PARAMS,
    LARGE,
    VALID_PARAMS,
    check_result,
    json_values,
    number_tokens,
    run_budget,
)

# an extreme but valid episode: posteriors that underflow to 0, agents that disagree
PANEL, _, REPORTS = parse_episode({
    "labels": ["a", "b", "c"], "prior": [1.0 - 2e-200, 1e-200, 1e-200],
    "confusion": [[[1e-200, 1.0 - 2e-200, 1e-200], [1e-200, 1.0 - 2e-200, 1e-200], [0.2, 0.3, 0.5]],
                  [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]]],
    "loss": [[0, 1, 1e12], [1, 0, 1e12], [5, 1, 0]],
    "reports": [["a", "b"], ["a", "a"], ["c", "b"], ["b", "b"], ["c", "c"], ["a", "c"]] * 3})

_numbers = st.from_regex(r"\A-?[0-9]{1,5000}(\.[0-9]{0,40})?([eE][+-]?[0-9]{1,4})?\Z")
_values = st.one_of(
    number_tokens, _numbers, st.text(max_size=12),
    st.floats().map(repr), st.integers().map(str),
    json_values.map(lambda v: json.dumps(v)),
    st.sampled_from([1, 64, 65, 1000, 10_000]).map(lambda d: "[" * d + "0.5" + "]" * d),
    st.sampled_from(['"0.9"', "uniform", "empirical", "risk", "reliability_gap", "true", "false",
                     "0.5", "12", "12.0", "6.5", " 3 ", "1e6", "1e-320"]))
_keys = st.sampled_from(KNOWN_PARAMS) | st.sampled_from(["", "bogus", " alpha ", "alpha="]) | st.text(max_size=6)
_valid = st.sampled_from(sorted(VALID_PARAMS)).flatmap(
    lambda key: VALID_PARAMS[key].map(lambda v: f"{key}={json.dumps(v) if not isinstance(v, str) else v}"))
_items = st.lists(st.one_of(_valid, _valid, _valid, st.tuples(_keys, _values).map("=".join), st.text(max_size=10)),
                  min_size=1, max_size=3)


def _run_main(items: list[str], db: Path) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["run", "synthetic", "--scenarios", "S1", "--seeds", "1", "--quiet",
                     "--db", str(db), *(f"--param={item}" for item in items)])
    return code, err.getvalue()


def _check(db: Path) -> Any:
    def check(items: list[str]) -> str:
        try:
            cfg = base_config(12, items)
        except ProjectError:
            code, err = _run_main(items, db)
            assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
            assert not db.exists()
            return "error"
        values = cfg.to_dict()
        assert all(math.isfinite(v) for v in values.values() if isinstance(v, float))
        json.dumps(values, allow_nan=False)
        result = explain_episode(PANEL, cfg, np.asarray(REPORTS))
        check_result(json.dumps(result, allow_nan=False), list(PANEL.labels), PANEL.n_agents)
        return "valid"
    return check


def _params(tmp_path: Path, budget: settings) -> None:
    counts = run_budget("run synthetic --param", _items, _check(tmp_path / "never.duckdb"), budget)
    assert counts["error"] and counts["valid"]


def test_fuzz_run_synthetic_params(tmp_path: Path) -> None:
    _params(tmp_path, DEFAULT)


@pytest.mark.fuzz_large
def test_fuzz_run_synthetic_params_large(tmp_path: Path) -> None:
    _params(tmp_path, LARGE)
