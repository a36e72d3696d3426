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
from sag.views.report import AFTER_VOTE_ROW, DIAGNOSES, GROUP_ROW, VOTE_ROW, ViewReport

ROOT = Path(__file__).resolve().parents[3]
HEADING = "### The second group on the 200 TEST cases"
"""The heading of docs/group_views.md's section on the featured (second) view group."""
WORDS = {True: "met", False: "**not met**", None: "reported"}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> ViewReport:
    with SagStore(tmp_path_factory.mktemp("goals") / "s.duckdb") as store:
        assert ensure_featured(store, FEATURED.export_path) > 0
        found, why = shipped_report(store, FEATURED)
    assert isinstance(found, ViewReport), why
    return found


@pytest.fixture(scope="module")
def goals(report: ViewReport) -> list[Goal]:
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


def test_the_counts_in_the_prose_are_the_measurement(report: ViewReport) -> None:
    """The sentences of docs/group_views.md and REPRODUCTION.md that count cases: the group's,
    each member's alone, the single answer's, both votes', what the debate changed, the D-CEM
    variant's escalations and the twins."""
    right = {r.name: r.n_correct for r in report.rows}
    alone = [right[f"{a} alone ({report.views[a]})"] for a in ("R1", "R2", "R3")]
    docs = " ".join(_section().split())
    assert (f"it is right on {right[GROUP_ROW]} of 200 held-out cases, on every diagnosis, where each member alone "
            f"is right on {alone[0]} (R1), {alone[1]} (R2) and {alone[2]} (R3), and one SmolLM2 answer on the whole "
            f"case on {right['one SmolLM2 answer on the whole case']}.") in docs
    assert (f"the members' first answers voted are right on {right[VOTE_ROW]}, and their answers after the debate "
            f"voted on {right[AFTER_VOTE_ROW]}") in docs
    repro = " ".join((ROOT / "REPRODUCTION.md").read_text(encoding="utf-8").split("#### The second group on 200", 1)[1]
                     .split())
    g = next(r for r in report.rows if r.name == GROUP_ROW)
    share = [a / 200 for a in alone]
    assert (f"It is right on {right[GROUP_ROW]} of the 200 cases ({g.accuracy:.3f}, {g.low:.3f} to {g.high:.3f}); "
            f"R1 alone, reading where the pain is, on {alone[0]} ({share[0]:.3f}), R2 on {alone[1]} ({share[1]:.3f}), "
            f"R3 on {alone[2]} ({share[2]:.3f}).") in repro
    moved = {c.agent: c for c in report.changes}
    assert (f"R1 changes {moved['R1'].wrong_to_right} wrong answers to right and "
            f"{'none' if moved['R1'].right_to_wrong == 0 else moved['R1'].right_to_wrong} right to wrong, "
            f"R2 {moved['R2'].wrong_to_right} and {moved['R2'].right_to_wrong}, "
            f"R3 {moved['R3'].wrong_to_right} and {moved['R3'].right_to_wrong}") in repro
    dcem = next(r for r in report.rows if r.name == "the group with D-CEM as its stopping rule")
    assert (f"it escalates {dcem.n - dcem.answered} of the 200 cases to a human (counted as not right) and is right "
            f"on {dcem.n_correct} of the {dcem.answered} it answers") in repro
    (sex, n_sex), (age, n_age) = report.cdr["sex"], report.cdr["age"]
    assert (f"none of the {n_sex} sex twins and one of the {n_age} age twins ({sex:.3f} and {age:.3f}), against "
            f"{report.chance_cdr:.3f}") in repro and round(sex * n_sex) == 0 and round(age * n_age) == 1
