"""Each panel member's own accuracy in a clinical run export, per cell (REPRODUCTION.md).

:func:`agent_rows` gives one row per (cell, panel position) with

- ``name`` and ``model``: the member's name from the cell's info and its model key from
  the run spec (``smollm2-135m``, ``openai:URL#MODEL``); a statistical member shows the
  kind its info records (``stat:nb-evidence``, also when the spec says only ``stat``);
- ``cal_accuracy``: the cell's ``calibration_accuracy`` of that member (what the
  confusion matrices were fit on);
- ``test_accuracy``: the share of the cell's TEST cases whose round-1 label under D-CEM
  (``dcem`` turns; the member's own first answer, before any mediator note) equals the
  case's truth; a turn without a label (a failed call) counts as wrong; NaN when the
  cell has no such turns;
- ``best``: whether the member was the cell's CAL-best agent (``best_agent``, the Single
  baseline's agent);
- ``split_cases`` and ``split_sided``: among the cell's TEST cases whose members' labels
  disagree at D-CEM's outcome round, how many there are and in how many D-CEM's pooled
  decision there is this member's label (who the mediator follows when the panel is
  split; 0 and 0 without outcomes and traces).

:func:`export_agent_rows` applies it to a loaded run export (None when the export has no
cells, cases or turns); :func:`dcem_clinical.report.markdown.render_clinical_markdown`
prints the rows as one table per dataset (``agents=``).
"""
from __future__ import annotations

import json
import math
from typing import Any, Mapping

import pandas as pd

__all__ = ["AGENT_ROW_COLUMNS", "FIRST_ROUND_METHOD", "STAT_BACKEND", "agent_rows", "export_agent_rows",
           "first_round_accuracy", "split_following", "position_letter"]

AGENT_ROW_COLUMNS = ["dataset", "run_id", "scenario", "seed", "agent", "name", "model", "cal_accuracy",
                     "test_accuracy", "best", "split_cases", "split_sided"]
FIRST_ROUND_METHOD = "dcem"
STAT_BACKEND = "stat"  # the backend name a statistical member's info records (dcem_clinical.stat_agent)
_CELL = ["run_id", "scenario", "seed"]
_MEMBER_COLUMNS = ["dataset", *_CELL, "agent", "name", "model", "cal_accuracy", "best"]  # what a cell's info gives


def position_letter(agent: int) -> str:
    """A, B, ... for panel positions 0, 1, ... (then A2, B2, ... past Z)."""
    letter = chr(ord("A") + agent % 26)
    return letter if agent < 26 else f"{letter}{agent // 26 + 1}"


def _float(value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return math.nan
    return out if math.isfinite(out) else math.nan


def _model(entry: Mapping[str, Any], key: str | None) -> str | None:
    """The member's model key; a statistical member's resolved kind from its info."""
    model = entry.get("model")
    if entry.get("backend") == STAT_BACKEND or (isinstance(model, str) and model.startswith(STAT_BACKEND + ":")):
        return str(model) if model else key
    if key:
        return key
    return None if model is None else str(model)


def _cell_members(cell: Mapping[str, Any], spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One dict per panel position of one cell (the cell's info and its run's spec)."""
    info = json.loads(cell["info_json"]) if isinstance(cell["info_json"], str) else dict(cell["info_json"] or {})
    entries = info.get("agents") if isinstance(info.get("agents"), list) else []
    accuracy = info.get("calibration_accuracy") if isinstance(info.get("calibration_accuracy"), list) else []
    keys = [str(k) for k in spec.get("agents", [])] if isinstance(spec.get("agents"), list) else []
    best = info.get("best_agent")
    members = []
    for a in range(max(len(entries), len(accuracy))):
        entry = entries[a] if a < len(entries) and isinstance(entries[a], Mapping) else {}
        members.append({
            "dataset": str(spec.get("dataset") or info.get("dataset") or "?"),
            "run_id": str(cell["run_id"]), "scenario": str(cell["scenario"]), "seed": int(cell["seed"]),
            "agent": a, "name": str(entry.get("name") or f"Agent {position_letter(a)}"),
            "model": _model(entry, keys[a] if a < len(keys) else None),
            "cal_accuracy": _float(accuracy[a]) if a < len(accuracy) else math.nan,
            "best": isinstance(best, int) and not isinstance(best, bool) and best == a})
    return members


def first_round_accuracy(cases: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Columns run_id, scenario, seed, agent, test_accuracy: each member's round-1 D-CEM
    labels against the cases' truth, per cell (a missing label is wrong)."""
    first = turns[(turns["method"] == FIRST_ROUND_METHOD) & (turns["round"] == 1)]
    keyed = first[["run_id", "case_id", "agent", "label"]].merge(
        cases[["run_id", "case_id", "scenario", "seed", "truth"]], on=["run_id", "case_id"], how="inner")
    label = pd.to_numeric(keyed["label"], errors="coerce").astype(float)
    truth = pd.to_numeric(keyed["truth"], errors="coerce").astype(float)
    keyed = keyed.assign(test_accuracy=(label == truth).astype(float), seed=keyed["seed"].astype(int),
                         agent=keyed["agent"].astype(int))
    return keyed.groupby([*_CELL, "agent"], sort=True)["test_accuracy"].mean().reset_index()


def split_following(outcomes: pd.DataFrame, traces: pd.DataFrame) -> pd.DataFrame:
    """Columns run_id, scenario, seed, agent, split_cases, split_sided: per cell and member,
    the D-CEM TEST cases whose labels disagree at the outcome round and how many of them
    D-CEM decided with this member's label."""
    cols = [*_CELL, "agent", "split_cases", "split_sided"]
    out = outcomes[outcomes["method"] == FIRST_ROUND_METHOD][["run_id", "case_id", "scenario", "seed", "rounds",
                                                              "decision"]]
    rounds = traces[traces["method"] == FIRST_ROUND_METHOD][["run_id", "case_id", "round", "reports"]]
    at = out.merge(rounds, left_on=["run_id", "case_id", "rounds"], right_on=["run_id", "case_id", "round"])
    rows = [(r.run_id, r.scenario, int(r.seed), a, 1, int(int(label) == int(r.decision)))
            for r in at.itertuples(index=False) if len(set(labels := [int(v) for v in r.reports])) > 1
            for a, label in enumerate(labels)]
    if not rows:
        return pd.DataFrame(columns=cols)
    return pd.DataFrame(rows, columns=cols).groupby([*_CELL, "agent"], sort=True).sum().reset_index()


def agent_rows(cells: pd.DataFrame, cases: pd.DataFrame, turns: pd.DataFrame, manifest: Mapping[str, Any], *,
               outcomes: pd.DataFrame | None = None, traces: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (cell, panel position), columns :data:`AGENT_ROW_COLUMNS`.

    cells, cases, turns : a run export's tables; manifest : its manifest (each run's
    spec gives the dataset and the members' model keys); outcomes, traces : the export's
    tables for the split columns (:func:`split_following`; zeros when either is None).
    """
    specs = {str(r.get("run_id")): r.get("spec") or {} for r in manifest.get("runs", [])}
    members = [m for _, cell in cells.iterrows() for m in _cell_members(cell, specs.get(str(cell["run_id"]), {}))]
    rows = pd.DataFrame(members, columns=_MEMBER_COLUMNS)
    if rows.empty:
        return pd.DataFrame(columns=AGENT_ROW_COLUMNS)
    rows = rows.astype({"seed": int, "agent": int})
    test = first_round_accuracy(cases, turns)
    out = rows.merge(test, on=[*_CELL, "agent"], how="left")
    if outcomes is not None and traces is not None and not outcomes.empty and not traces.empty:
        split = split_following(outcomes, traces).astype({"seed": int, "agent": int})
        out = out.merge(split, on=[*_CELL, "agent"], how="left")
    out = out.reindex(columns=AGENT_ROW_COLUMNS)
    out[["split_cases", "split_sided"]] = out[["split_cases", "split_sided"]].fillna(0).astype(int)
    return out[AGENT_ROW_COLUMNS].sort_values(["dataset", *_CELL, "agent"]).reset_index(drop=True)


def export_agent_rows(export: Any) -> pd.DataFrame | None:
    """:func:`agent_rows` of a loaded run export (:class:`dcem.store.run_export.RunExport`),
    None when it has no cells, cases or turns (then the markdown has no agents table)."""
    if any(getattr(export, t).empty for t in ("cells", "cases", "turns")):
        return None
    return agent_rows(export.cells, export.cases, export.turns, export.manifest, outcomes=export.outcomes,
                      traces=export.traces)
