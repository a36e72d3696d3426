"""Aggregate stored metrics into the paper's comparison tables.

- :func:`comparison_table`: Fig. 3, mean ± std over seeds per scenario, method, metric;
- :func:`compliance_table`: Table 5, the partial-compliance ablation.  App. F reads it at
  a fixed horizon: agent accuracies, risk (``risk_at_T``), SA-HR and escalation
  (``escalation_at_T``) of round T itself (:data:`AT_T_METRICS`); ``risk`` and
  ``escalation_rate`` are a second view, the outcome reached by round T (:data:`BY_T_METRICS`);
- :func:`escalation_table`: D-CEM against D-CEM without STOP_AND_ESCALATE (Table 1 style).
Beside the system risk (an escalated case counts 0) the comparison and escalation tables
carry the risk with escalation charged at ``escalation_cost``
(:mod:`dcem.analysis.charged_risk`, default 0.5).  Each returns a tidy DataFrame;
:func:`format_table` renders one as fixed-width text.
"""
from __future__ import annotations

import math
from typing import Any

import pandas as pd

from dcem.analysis.charged_risk import CHARGED, DEFAULT_COST, with_charged_risk
from dcem.core.vocabulary import method_label, order_methods

__all__ = ["AT_T_METRICS", "BY_T_METRICS", "mean_std", "comparison_table", "compliance_table", "escalation_table", "format_table",
           "report_dict", "COMPARISON_METRICS"]

AT_T_METRICS = ("A1", "A2", "risk_at_T", "sa_hr", "escalation_at_T")
BY_T_METRICS = ("risk", "escalation_rate")
COMPARISON_METRICS = ("accuracy", "risk", "high_risk_miss", "harmful_consensus", "system_risk", CHARGED,
                      "escalation_rate", "certified_rate", "decided_rate", "avg_rounds")


def mean_std(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Rows (``keys``, mean, std, n) of the ``value`` column over seeds; std with ddof=0,
    so a single seed reports 0 rather than NaN."""
    grouped = frame.groupby(keys, sort=False)["value"]
    out = grouped.agg(mean="mean", std=lambda v: float(v.std(ddof=0)) if v.notna().any() else math.nan,
                      n="count").reset_index()
    return out


def comparison_table(metrics: pd.DataFrame, *, escalation_cost: float = DEFAULT_COST) -> pd.DataFrame:
    """Rows (scenario, method, metric, mean, std, n) over seeds; methods in display order;
    the charged risk (``charged_risk``, escalation at ``escalation_cost``) beside the system risk."""
    if metrics.empty:
        return pd.DataFrame(columns=["scenario", "method", "metric", "mean", "std", "n"])
    out = mean_std(with_charged_risk(metrics, escalation_cost), ["scenario", "method", "metric"])
    out["method"] = pd.Categorical(out["method"], order_methods(set(out["method"])))
    return out.sort_values(["scenario", "method", "metric"]).reset_index(drop=True)


def compliance_table(ablation: pd.DataFrame) -> pd.DataFrame:
    """Rows (scenario, xi, horizon, metric, mean, std, n)."""
    if ablation.empty:
        return pd.DataFrame(columns=["scenario", "xi", "horizon", "metric", "mean", "std", "n"])
    return mean_std(ablation, ["scenario", "xi", "horizon", "metric"]).sort_values(
        ["scenario", "xi", "horizon", "metric"]).reset_index(drop=True)


def escalation_table(metrics: pd.DataFrame, *, escalation_cost: float = DEFAULT_COST) -> pd.DataFrame:
    """System risk (escalation free and charged at ``escalation_cost``) and harmful
    consensus of D-CEM with and without escalation."""
    keep = metrics[metrics["method"].isin(["dcem", "dcem_noesc"])
                   & metrics["metric"].isin(["system_risk", "harmful_consensus", "escalation_rate"])]
    return comparison_table(keep, escalation_cost=escalation_cost)


def _cell(mean: float, std: float) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "n/a"
    return f"{mean:.2f} ± {std:.2f}"


def format_table(table: pd.DataFrame, *, index: list[str], columns: str) -> str:
    """Pivot mean ± std cells into a fixed-width text table."""
    if table.empty:
        return "(no results)"
    cells = table.assign(cell=[_cell(m, s) for m, s in zip(table["mean"], table["std"])])
    wide = cells.pivot_table(index=index, columns=columns, values="cell", aggfunc="first", observed=True)
    wide = wide.rename(index=method_label, columns=method_label)
    return wide.to_string()


def report_dict(metrics: pd.DataFrame, ablation: pd.DataFrame, *,
                escalation_cost: float = DEFAULT_COST) -> dict[str, Any]:
    """Machine-readable report: the three tables as lists of records (``charged_risk`` rows
    at ``escalation_cost``, which the dict states)."""
    def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
        rows = frame.astype({"method": str}) if "method" in frame else frame
        return [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
                for r in rows.to_dict("records")]

    return {"escalation_cost": escalation_cost,
            "comparison": records(comparison_table(metrics, escalation_cost=escalation_cost)),
            "compliance": records(compliance_table(ablation)),
            "escalation": records(escalation_table(metrics, escalation_cost=escalation_cost))}
