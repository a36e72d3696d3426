"""The goals a view group is measured against (issue 52, ``docs/group_views.md``), each
with its measured numbers and whether it is met: pure functions of a
:class:`sag.views.report.ViewReport`.

- the group above its best member alone (paired 95 % interval above 0) and at 0.6 or more;
- the group at least as good as the members' majority vote (what debate adds over voting),
  and, reported, the group beside the vote of the members' answers after the debate (what
  the judge adds);
- the group's most frequent answer on at most 40 % of items; every diagnosis's recall above 0;
- per member, more answer changes from wrong to right than from right to wrong;
- the counterfactual divergence rate on twins, beside the rate of independent answers;
- seconds per item at most 8x one single answer of the same model.  The stored runs' ratio is
  reported only: the group and the single answers are played at different times, under
  whatever else the machine ran, so the goal is decided by a ratio measured in one run
  (``benchmarks/views_cost.py``, BENCHMARKS.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from sag.views.measures import zero_recall_words
from sag.views.report import AFTER_VOTE_ROW, GROUP_ROW, VOTE_ROW

__all__ = ["Goal", "view_goals", "goals_markdown", "GROUP_ROW", "VOTE_ROW", "MIN_ACCURACY", "MAX_TOP_SHARE",
           "MAX_COST", "COST_GOAL"]

MIN_ACCURACY, MAX_TOP_SHARE, MAX_COST = 0.6, 0.4, 8.0
COST_GOAL = (f"at most {MAX_COST:g}x the seconds of one single answer (stored runs, played at different times: "
             "the ratio measured in one run, BENCHMARKS.md, decides)")


@dataclass(frozen=True)
class Goal:
    """One goal: what it asks, what was measured, and whether it is met (None: no threshold,
    a figure reported beside its reference)."""

    goal: str
    measured: str
    met: bool | None


def _row(rows: Sequence[Any], name: str) -> Any:
    found = [r for r in rows if r.name == name]
    if not found:
        raise ValueError(f"the report has no row {name!r}")
    return found[0]


def _versus(group: Any, other: Any) -> tuple[float, float, float]:
    """(group - other, its interval) from ``other``'s paired difference (other - group); a
    bound of 0 stays 0, never printed as -0.000."""
    return 0.0 - other.diff, 0.0 - other.diff_high, 0.0 - other.diff_low


def _member_goals(report: Any, group: Any) -> list[Goal]:
    alone = [r for r in report.rows if r.name.endswith(")") and " alone (" in r.name]
    best = max(alone, key=lambda r: r.accuracy)
    d, low, high = _versus(group, best)
    vote = _row(report.rows, VOTE_ROW)
    dv, vlow, vhigh = _versus(group, vote)
    goals = [Goal("the group above its best member alone (paired 95 % interval above 0)",
                 f"{group.accuracy:.3f} against {best.name} {best.accuracy:.3f}: {d:+.3f} ({low:+.3f} to {high:+.3f})",
                 low > 0),
            Goal(f"the group at {MIN_ACCURACY} or more", f"{group.accuracy:.3f}", group.accuracy >= MIN_ACCURACY),
            Goal("the group at least as good as the members' majority vote",
                 f"{dv:+.3f} ({vlow:+.3f} to {vhigh:+.3f}) against the vote's {vote.accuracy:.3f}", dv >= 0)]
    after = [r for r in report.rows if r.name == AFTER_VOTE_ROW]
    if after:
        da, alow, ahigh = _versus(group, after[0])
        goals.append(Goal("the group beside the members' majority vote after the debate (what the judge adds)",
                          f"{da:+.3f} ({alow:+.3f} to {ahigh:+.3f}) against that vote's {after[0].accuracy:.3f}",
                          None))
    return goals


def view_goals(report: Any, diagnoses: Sequence[str]) -> list[Goal]:
    """Every goal of the module docstring, measured on ``report``."""
    group = _row(report.rows, GROUP_ROW)
    goals = _member_goals(report, group)
    never = ", ".join(w.removeprefix("never diagnoses ") for w in zero_recall_words(group, diagnoses))
    goals += [Goal(f"the most frequent answer on at most {MAX_TOP_SHARE:.0%} of items",
                   f"{group.top_answer} on {group.top_share:.1%}", group.top_share <= MAX_TOP_SHARE),
              Goal("every diagnosis's recall above 0", f"never diagnoses {never}" if never else
                   f"lowest {min(group.recall):.2f}", not never)]
    for c in report.changes:
        goals.append(Goal(f"{c.agent} ({report.views.get(c.agent, '')}): more changes from wrong to right than "
                          "from right to wrong", f"{c.wrong_to_right} against {c.right_to_wrong}",
                          c.wrong_to_right > c.right_to_wrong))
    for kind, (rate, n) in report.cdr.items():
        goals.append(Goal(f"answers unchanged when the patient's {kind} is swapped (CDR beside chance)",
                          f"CDR {rate:.3f} on {n} twins; independent answers {report.chance_cdr:.3f}", None))
    cost = report.cost
    if "single seconds per item" in cost:
        ratio = cost["seconds per item"] / cost["single seconds per item"]
        goals.append(Goal(COST_GOAL, f"{ratio:.1f}x ({cost['seconds per item']:.2f} s against "
                          f"{cost['single seconds per item']:.2f} s)", None))
    return goals


def goals_markdown(goals: Sequence[Goal]) -> str:
    """The goals as a Markdown table: goal, measured, met / not met / reported."""
    words = {True: "met", False: "**not met**", None: "reported"}
    lines = ["| goal | measured | |", "|---|---|---|"]
    lines += [f"| {g.goal} | {g.measured} | {words[g.met]} |" for g in goals]
    return "\n".join(lines)
