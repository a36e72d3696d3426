"""docs/group_views.md's goal table for the featured view group is its shipped measurement:
every goal's measured figures as ``sag.views.goals`` computes them from the export, each
with its verdict, and the cost goal decided by BENCHMARKS.md's one-run ratio (the last line
of benchmarks/results/views_cost.jsonl, measured on this group)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from sag.store.tables import SagStore
from sag.views.featured import FEATURED, ensure_featured, shipped_report
from sag.views.goals import COST_GOAL, Goal, view_goals
from sag.views.report import DIAGNOSES, ViewReport

ROOT = Path(__file__).resolve().parents[3]
HEADING = "### The second group on the 200 TEST cases"
"""The heading of docs/group_views.md's section on the featured (second) view group."""
WORDS = {True: "met", False: "**not met**", None: "reported"}


@pytest.fixture(scope="module")
def goals(tmp_path_factory: pytest.TempPathFactory) -> list[Goal]:
    with SagStore(tmp_path_factory.mktemp("goals") / "s.duckdb") as store:
        assert ensure_featured(store, FEATURED.export_path) > 0
        report, why = shipped_report(store, FEATURED)
    assert isinstance(report, ViewReport), why
    return view_goals(report, DIAGNOSES)


def _section() -> str:
    text = (ROOT / "docs/group_views.md").read_text(encoding="utf-8")
    assert HEADING in text, f"docs/group_views.md has no section {HEADING!r}"
    return text.split(HEADING, 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]


def test_the_featured_group_is_the_second_training() -> None:
    assert FEATURED.name == "ddx-views2-trained" and FEATURED.export == "data/results/sag_views2"


def test_every_measured_goal_is_in_the_docs_with_its_verdict(goals: list[Goal]) -> None:
    rows = [line for line in _section().splitlines() if line.startswith("| ")]
    for goal in goals:
        if goal.goal == COST_GOAL:
            continue
        row = next((r for r in rows if f"| {goal.measured} |" in r), None)
        assert row is not None, f"docs/group_views.md states no row measuring {goal.measured!r} ({goal.goal})"
        assert row.rstrip().endswith(f"| {WORDS[goal.met]} |"), (row, goal.met)


def test_the_cost_goal_is_the_one_run_benchmark(goals: list[Goal]) -> None:
    line = json.loads((ROOT / "benchmarks/results/views_cost.jsonl").read_text(encoding="utf-8").splitlines()[-1])
    assert line["group"] == Path(FEATURED.group).name
    stored = next(g for g in goals if g.goal == COST_GOAL)
    section = " ".join(_section().split())
    verdict = WORDS[bool(line["goal_met"])]
    group, single = (sum(line[k]) / len(line[k]) for k in ("runs_group", "runs_single"))  # as BENCHMARKS.md
    assert (f"{line['seconds_ratio']:.1f}x in one run ({group:.2f} s against {single:.2f} s per item on "
            f"{line['items']} TEST cases, {line['repeats']} repeats; {line['tokens_ratio']:.1f}x the tokens)") in section
    assert f"the stored runs, played hours apart under other loads, {stored.measured.split(' ')[0]} | {verdict} |" \
        in section
