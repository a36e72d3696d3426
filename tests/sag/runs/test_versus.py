"""Runs against a base run on their common items (``python -m sag compare``): chance, the
best constant answer, each run's most frequent answer and the paired difference."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from common.errors import InputError
from sag.runs.versus import versus_markdown, versus_rows

from ..cli_fakes import one_error_line, run_cli
from ..group_runs import GROUP_RUN_ITEMS, build_group_runs


def _outcomes(answers: str, truth: str, *, benchmark: str = "b", refused: str = "") -> pd.DataFrame:
    return pd.DataFrame({"item_id": [f"i{k}" for k in range(len(answers))], "answer": list(answers),
                         "truth": list(truth), "correct": [a == t for a, t in zip(answers, truth)],
                         "refused": [k in refused for k in answers], "benchmark": benchmark})


def _items(n: int, options: int = 4) -> pd.DataFrame:
    letters = "ABCDEFGH"[:options]
    return pd.DataFrame({"item_id": [f"i{k}" for k in range(n)],
                         "options_json": [json.dumps([[c, c.lower()] for c in letters])] * n})


def test_each_run_beside_chance_the_best_constant_answer_and_the_base() -> None:
    truth = "ABCDABCDAA"  # "A" is right on 4 of 10
    rows = versus_rows({"base": _outcomes("AAAAAAAAAA", truth), "trained": _outcomes("ABCDABCDAB", truth)},
                       _items(10), "base", rng=np.random.default_rng(0))
    base, trained = rows
    assert (base.items, base.chance, base.best_letter, base.best_share) == (10, 0.25, "A", 0.4)
    assert base.accuracy == 0.4 and (base.top_answer, base.top_share) == ("A", 1.0) and base.difference is None
    assert trained.accuracy == 0.9 and trained.difference is not None
    diff, low, high = trained.difference
    assert diff == pytest.approx(0.5) and 0 < low <= diff <= high
    assert trained.interval[0] < 0.9 < trained.interval[1]
    text = versus_markdown(rows)
    assert "| base | 10 | 0.250 | A 0.400 | 0.400 [" in text and "| A 100% | 0% | base |" in text
    assert "+0.500 [" in text and "run - base [95 % paired bootstrap]" in text
    assert "base: one answer on more than 50%" in text and "trained:" not in text.split("\n\n")[1]


def test_only_the_items_every_run_answered_count_and_refusals_are_shown() -> None:
    base = _outcomes("ABCD", "ABCD")
    other = _outcomes("AXC", "ABC", refused="X")  # item i3 has no answer in this run
    rows = versus_rows({"base": base, "other": other}, _items(4), "base", rng=np.random.default_rng(0))
    assert [r.items for r in rows] == [3, 3] and rows[1].refused == pytest.approx(1 / 3)
    assert rows[1].difference is not None and rows[1].difference[0] == pytest.approx(-1 / 3)


@pytest.mark.parametrize("outcomes, message", [
    ({"a": _outcomes("AB", "AB"), "b": _outcomes("AB", "AB", benchmark="other")}, "different benchmarks"),
    ({"a": _outcomes("AB", "AB"), "b": _outcomes("AB", "AB").assign(item_id=["x", "y"])}, "no answered item"),
    ({"a": _outcomes("AB", "AB"), "c": _outcomes("AB", "AB")}, "'b' is not one of the runs"),
])
def test_runs_that_cannot_be_compared_are_refused(outcomes: dict, message: str) -> None:
    base = "a" if "b" in outcomes else "b"
    with pytest.raises(InputError, match=message):
        versus_rows(outcomes, _items(2), base, rng=np.random.default_rng(0))


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("versus") / "sag.duckdb"
    runs = build_group_runs(path, tmp_path_factory.mktemp("idx"))
    return path, {name: s.run_id for name, s in runs.items()}


def test_the_compare_command_prints_the_table(stored: tuple[Path, dict[str, str]]) -> None:
    path, ids = stored
    code, out, err = run_cli(["compare", ids["sag"], ids["majority"], "--db", str(path)])
    assert code == 0, err
    lines = out.splitlines()
    sag, majority = lines[2], lines[3]
    # every scripted sag-6 agent answers B (no item's truth), the majority group always C (one item's)
    assert sag.startswith(f"| sag-6 ({ids['sag']}) | {GROUP_RUN_ITEMS} | 0.250 |") and "| B 100% |" in sag
    assert majority.startswith(f"| sag-6-majority ({ids['majority']}) |") and "| C 100% |" in majority
    assert "| 0.333 [" in majority and "+0.333 [" in majority


def test_the_compare_command_refuses_in_one_line(stored: tuple[Path, dict[str, str]]) -> None:
    path, ids = stored
    assert "no SAG run 'nope'" in one_error_line(*run_cli(["compare", ids["sag"], "nope", "--db", str(path)]))
    assert "no answered item in common" in one_error_line(
        *run_cli(["compare", ids["sag"], ids["dcem"], "--db", str(path)]))
    assert "at least one run other than the base" in one_error_line(
        *run_cli(["compare", ids["sag"], ids["sag"], "--db", str(path)]))
    assert "no store file" in one_error_line(*run_cli(["compare", "a", "b", "--db", str(path.parent / "no.duckdb")]))
