"""The metrics of a run export, re-derived from its outcomes: what makes the tables auditable.

For every (run, scenario, seed, method) :func:`recompute_metrics` recomputes from the
exported per-case outcomes and the cell's loss matrix and high-cost classes

- the Appendix E metrics of :func:`dcem.core.metrics.episode_metrics` (risk,
  system_risk R_L^sys, accuracy, high_risk_miss, harmful_consensus H.C.,
  certified_rate, escalation_rate, avg_rounds), i.e. the numbers of Tables 6, 7 and 1;
- for the mediated methods of clinical runs, the action mix (``mix_continue`` ... ``mix_escalate``): the
  share of each mediator action among the rounds played up to each case's outcome, from
  the exported traces;
- for clinical runs, ``parse_error_rate``: the share of the method's agent turns whose
  reply could not be used.

:func:`metric_mismatches` lists where the exported metrics table disagrees with them.
:func:`clinical_metrics` is the exported metrics table with each run's dataset, the
frame :mod:`dcem_clinical.report.tables` prints.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from dcem.core.metrics import episode_metrics
from dcem.core.policy import Action
from dcem.core.vocabulary import mediated_methods
from dcem.store.run_export import RunExport

__all__ = ["recompute_metrics", "metric_mismatches", "clinical_metrics", "MIX_METRICS"]

MIX_METRICS = {Action.CONTINUE.name: "mix_continue", Action.DIFFERENTIAL_STEER.name: "mix_steer",
               Action.STOP_AND_DECIDE.name: "mix_decide", Action.STOP_AND_ESCALATE.name: "mix_escalate"}
_KEYS = ["run_id", "scenario", "seed", "method"]


def _action_mix(traces: pd.DataFrame, outcomes: pd.DataFrame) -> dict[str, float]:
    """Share of each action among the rounds 1..rounds played by each case."""
    played = traces.merge(outcomes[["case_id", "rounds"]], on="case_id")
    acts = played.loc[played["round"] <= played["rounds"], "action"]
    total = max(len(acts), 1)
    return {name: float((acts == action).sum() / total) for action, name in MIX_METRICS.items()}


def _cell_metrics(group: pd.DataFrame, loss: np.ndarray, high_risk: list[int]) -> dict[str, float]:
    action = np.array([int(Action[a]) for a in group["action"]])
    return episode_metrics(group["decision"].to_numpy(), action, group["rounds"].to_numpy(),
                           group["truth"].to_numpy(), loss, high_risk, group["certified"].to_numpy(bool))


def _parse_error_rates(export: RunExport) -> pd.DataFrame:
    clinical = [r for r in export.run_ids if export.run(r)["kind"] == "clinical"]
    turns = export.turns[export.turns["run_id"].isin(clinical)]
    keyed = turns.merge(export.cases[["run_id", "case_id", "scenario", "seed"]], on=["run_id", "case_id"])
    keyed = keyed.assign(value=keyed["error"].notna().astype(float))
    rates = keyed.groupby(_KEYS, sort=True)["value"].mean().reset_index()
    return rates.assign(metric="parse_error_rate")


def recompute_metrics(export: RunExport) -> pd.DataFrame:
    """Rows (run_id, scenario, seed, method, metric, value) recomputed from the export."""
    cells = export.cells.set_index(["run_id", "scenario", "seed"])
    mediated = set(mediated_methods())
    clinical = {r for r in export.run_ids if export.run(r)["kind"] == "clinical"}
    rows: list[tuple[object, ...]] = []
    for (run_id, scenario, seed, method), group in export.outcomes.groupby(_KEYS, sort=True):
        cell = cells.loc[(run_id, scenario, seed)]
        loss = np.array([np.asarray(row, dtype=float) for row in cell["loss"]])
        values = _cell_metrics(group, loss, [int(h) for h in cell["high_risk"]])
        if method in mediated and run_id in clinical:  # the action mix is a clinical-run metric
            traces = export.traces[(export.traces["run_id"] == run_id) & (export.traces["method"] == method)
                                   & export.traces["case_id"].isin(group["case_id"])]
            if traces["action"].notna().any():
                values.update(_action_mix(traces, group))
        rows += [(run_id, scenario, int(seed), method, k, v) for k, v in values.items()]
    frame = pd.DataFrame(rows, columns=[*_KEYS, "metric", "value"])
    frame = pd.concat([frame, _parse_error_rates(export)[frame.columns]], ignore_index=True)
    return frame.sort_values([*_KEYS, "metric"]).reset_index(drop=True)


LATER_METRICS = frozenset({"decided_rate"})  # metrics added after exports were shipped


def metric_mismatches(export: RunExport, *, atol: float = 1e-9) -> pd.DataFrame:
    """Exported metrics that the outcomes do not give back (value differs, or one side is
    missing among the recomputable metrics); empty when the export is consistent."""
    again = recompute_metrics(export)
    absent = LATER_METRICS - set(export.metrics["metric"])  # the export predates them: nothing to compare
    again = again[~again["metric"].isin(absent)]
    stored = export.metrics[export.metrics["metric"].isin(set(again["metric"]))]
    both = stored.merge(again, on=[*_KEYS, "metric"], how="outer", suffixes=("_exported", "_recomputed"),
                        indicator=True)
    a, b = both["value_exported"].to_numpy(float), both["value_recomputed"].to_numpy(float)
    same = (np.isnan(a) & np.isnan(b)) | (np.abs(a - b) <= atol)
    return both[~same | (both["_merge"] != "both")].drop(columns="_merge").reset_index(drop=True)


def clinical_metrics(export: RunExport) -> pd.DataFrame:
    """The exported metrics with a ``dataset`` column from each run's spec."""
    datasets = {r: str(export.run(r)["spec"].get("dataset", "?")) for r in export.run_ids}
    return export.metrics.assign(dataset=export.metrics["run_id"].map(datasets))
