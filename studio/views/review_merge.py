"""Reviewed cases into the loaded calibration set, with what differs said first (no Streamlit).

The Escalation review page turns a run's reviewed cases into calibration rows whose agents
are named by their place in the panel ("agent 1", "agent 2", ...).  Rows named alike are
one agent to a calibration set, so reviews from a cell whose panel differs (another
scenario's roles, other models or views), or from another run than the loaded set's,
would pool other agents' answers into one confusion matrix; a set whose agents have other
names gets the reviewed agents as new agents.  :func:`plan_reviewed_merge` computes the
merged set and lists each such difference in words; the page adds the reviews at once
when the list is empty and asks first otherwise.

A cell's line-up (:func:`cell_lineups`) is read from its stored information: per agent,
the model, the part of the case it read (its view) and its role sentence; a synthetic
cell's agents are its scenario's rule agents (one per confusion matrix).
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pandas as pd

from dcem.calibration.reviewed_labels import ReviewedInto, reviewed_into
from dcem.calibration.sets import CalibrationSet, rows_to_set
from dcem.store.reviews import reviewed_as_calibration_rows
from dcem.store.run_reads import cell_confusions, replay_cases

__all__ = ["Cell", "MergePlan", "cell_lineups", "plan_reviewed_merge", "review_merge_plan"]

Cell = tuple[str, int]
_ROLE_CHARS = 60


@dataclass(frozen=True, eq=False)
class MergePlan:
    """The set the reviews would make (``merged``), the set it came from (``current``,
    None when none was loaded) and what differs (empty: nothing to ask)."""

    merged: ReviewedInto
    current: CalibrationSet | None
    differences: tuple[str, ...]

    @property
    def ask_first(self) -> bool:
        return bool(self.differences)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _ROLE_CHARS else text[: _ROLE_CHARS - 1].rstrip() + "…"


def _agent_words(agent: Any, view: Any, role: Any) -> str:
    model = agent.get("model") if isinstance(agent, dict) else agent
    own_view = agent.get("view") if isinstance(agent, dict) else None
    view = own_view or view
    words = str(model) if model is not None else "an agent"
    if view and view != "all":
        words += f" reading the {view}"
    if role:
        words += f" ('{_short(str(role))}')"
    return words


def cell_lineups(cells: Sequence[tuple[Any, Any, Any, Any]]) -> dict[Cell, tuple[str, ...]]:
    """``{(scenario, seed): one description per agent}`` from rows of
    :func:`dcem.store.run_reads.cell_confusions` (scenario, seed, confusion, info_json)."""
    out: dict[Cell, tuple[str, ...]] = {}
    for scenario, seed, confusion, info_json in cells:
        try:
            info = json.loads(info_json) if isinstance(info_json, str) else dict(info_json or {})
        except (TypeError, ValueError):
            info = {}
        agents = info.get("agents") if isinstance(info.get("agents"), list) else []
        views = info.get("views") if isinstance(info.get("views"), list) else []
        roles = info.get("roles") if isinstance(info.get("roles"), list) else []
        if agents:
            out[(str(scenario), int(seed))] = tuple(
                _agent_words(agent, views[a] if a < len(views) else None, roles[a] if a < len(roles) else None)
                for a, agent in enumerate(agents))
        else:  # a synthetic cell: its scenario's rule agents, as many as its confusion matrices
            n = len(confusion) if isinstance(confusion, (list, tuple)) or hasattr(confusion, "__len__") else 1
            out[(str(scenario), int(seed))] = tuple(f"rule agent {a + 1} of scenario {scenario}" for a in range(n))
    return out


def _cell_name(cell: Cell) -> str:
    return f"{cell[0]}/seed {cell[1]}"


def _cells_words(counts: Mapping[Cell, int]) -> str:
    return ", ".join(f"{_cell_name(cell)} ({n} case{'s' * (n != 1)})" for cell, n in sorted(counts.items()))


def _lineup_words(first: tuple[Cell, tuple[str, ...]], other: tuple[Cell, tuple[str, ...]]) -> str:
    """Where two cells' line-ups differ, agent by agent."""
    (cell_a, a), (cell_b, b) = first, other
    if len(a) != len(b):
        return (f"{_cell_name(cell_a)} has {len(a)} agent(s) ({'; '.join(a)}), {_cell_name(cell_b)} {len(b)} "
                f"({'; '.join(b)})")
    parts = [f"agent {i + 1} is {x} in {_cell_name(cell_a)} but {y} in {_cell_name(cell_b)}"
             for i, (x, y) in enumerate(zip(a, b)) if x != y]
    return "; ".join(parts)


def _lineup_differences(counts: Mapping[Cell, int], base: Mapping[Cell, int],
                        lineups: Mapping[Cell, tuple[str, ...]]) -> list[str]:
    """Each line-up among ``counts``' cells that differs from the first line-up of ``base``."""
    reference = next(((cell, lineups[cell]) for cell in sorted(base) if cell in lineups), None)
    if reference is None:
        return []
    seen: set[tuple[str, ...]] = {reference[1]}
    out = []
    for cell in sorted(counts):
        lineup = lineups.get(cell)
        if lineup is None or lineup in seen:
            continue
        seen.add(lineup)
        out.append(_lineup_words(reference, (cell, lineup)))
    return out


def plan_reviewed_merge(rows: pd.DataFrame, labels: Sequence[str], *, run_id: str, current: CalibrationSet | None,
                        case_cells: Mapping[str, Cell], lineups: Mapping[Cell, tuple[str, ...]]) -> MergePlan:
    """The reviewed rows (:func:`dcem.store.reviews.reviewed_as_calibration_rows`) merged into
    ``current`` (:func:`dcem.calibration.reviewed_labels.reviewed_into`; its refusals
    raise), and the differences to say before: reviewed cases from cells whose agents
    differ (from each other, or from the set's cells of this run), a set that holds no case
    of this run, and agents the set names otherwise.  ``case_cells``: every case of the run
    and its cell; ``lineups``: :func:`cell_lineups` of the run."""
    reviewed = rows_to_set(rows, labels, f"reviews of run {run_id}")
    merged = reviewed_into(current, reviewed)
    cases = list(dict.fromkeys(reviewed.case_ids))
    counts = Counter(case_cells[c] for c in cases if c in case_cells)
    differences: list[str] = []
    if current is None:
        if len({lineups.get(cell) for cell in counts}) > 1:
            found = _lineup_differences(counts, counts, lineups)
            differences.append(f"The {len(cases)} reviewed cases come from cells whose agents differ "
                               f"({_cells_words(counts)}): {'; '.join(found)}. In one set the rows of 'agent 1' "
                               "would pool different agents' answers into one confusion matrix.")
        return MergePlan(merged, current, tuple(differences))
    held = Counter(case_cells[c] for c in dict.fromkeys(current.case_ids) if c in case_cells)
    if not held:
        differences.append(f"The loaded set ({current.source}) holds none of run {run_id}'s cases: it comes from "
                           "another run, a file or the synthetic world, so its agents need not be this run's.")
    else:
        other = {cell: n for cell, n in counts.items() if cell not in held}
        if other:
            text = (f"{sum(other.values())} of the {len(cases)} reviewed cases come from other cells than the set's "
                    f"cases ({_cells_words(held)}): {_cells_words(other)}.")
            found = _lineup_differences(other, held, lineups)
            if found:
                text += f" Their agents differ: {'; '.join(found)}."
            differences.append(text)
    new_agents = [a for a in reviewed.agents if a not in current.agents]
    if new_agents:
        total = merged.calibration_set.n_agents
        differences.append(f"The set names its agents {', '.join(current.agents)}; the reviews name theirs "
                           f"{', '.join(reviewed.agents)} by their place in the panel, so {len(new_agents)} new "
                           f"agent{'s' * (len(new_agents) != 1)} would join and the set would have {total} agents.")
    return MergePlan(merged, current, tuple(differences))


def review_merge_plan(store: Any, run_id: str, labels: Sequence[str], current: CalibrationSet | None,
                      method: str = "dcem") -> MergePlan:
    """:func:`plan_reviewed_merge` of the run's reviewed cases, read from ``store``."""
    rows = reviewed_as_calibration_rows(store, run_id, method)
    cases = replay_cases(store, run_id)
    case_cells = {str(c): (str(s), int(k)) for c, s, k in zip(cases["case_id"], cases["scenario"], cases["seed"])}
    return plan_reviewed_merge(rows, labels, run_id=run_id, current=current, case_cells=case_cells,
                               lineups=cell_lineups(cell_confusions(store, run_id)))
