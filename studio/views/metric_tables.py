"""Metric tables shaped for a table widget: one row per scenario and method, one column
per metric, rates in percent.

The report tables (:func:`dcem.analysis.report.comparison_table`, the clinical
:func:`~dcem_clinical.report.tables.table6` ...) are long: one row per scenario, method
and metric with the mean, std and count over seeds.  :func:`wide_metrics` turns such a
table into the frame the dashboard shows: key columns first (method keys replaced by
their display labels), then one column per metric named by its key (the dashboard puts
the words and the tooltip on it, :mod:`studio.views.glossary`).  Shares (the
:data:`~studio.views.glossary.RATE_METRICS` and the clinical shares) become percentages;
with ``spread`` each cell is the text "mean ± std" in the same unit instead of the mean.
"""
from __future__ import annotations

import math
from functools import partial
from typing import Sequence

import pandas as pd

from dcem_clinical.report.tables import MIX, detail_table, table1, table6, table7
from dcem.analysis.charged_risk import DEFAULT_COST, charged_words
from studio.views.glossary import METRICS, RATE_METRICS
from dcem.analysis.report import comparison_table
from dcem.core.vocabulary import method_label
# names its page imports from here (pages import from studio only)
from studio.views.glossary import metric_words, term_help
from dcem.analysis.run_info import describe_run, run_kind, run_spec, runs_overview

__all__ = ["PERCENT_METRICS", "CLINICAL_TITLES", "is_percent", "wide_metrics", "comparison_view", "clinical_views",
           "metric_columns", "risk_note"]

# shares shown in percent: the glossary's rates, the clinical parse-error rate, the action mix
PERCENT_METRICS: tuple[str, ...] = (*RATE_METRICS, "parse_error_rate", *MIX)
_LONG = ("metric", "mean", "std")


def is_percent(metric: str) -> bool:
    """Whether the metric is a share, shown in percent."""
    return metric in PERCENT_METRICS


def _number(value: float, percent: bool) -> float:
    return value * 100.0 if percent else value


def _spread_text(mean: float, std: float, percent: bool) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "n/a"
    unit = " %" if percent else ""
    digits = 1 if percent else 2
    std_text = "n/a" if std is None or math.isnan(std) else f"{_number(std, percent):.{digits}f}"
    return f"{_number(mean, percent):.{digits}f}{unit} ± {std_text}"


def _metric_order(values: pd.Series) -> list[str]:
    """The distinct metrics in order: a categorical's category order, else the glossary's
    order of :data:`~studio.views.glossary.METRICS` and then the rest as they come."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        present = set(values.astype(str))
        return [str(c) for c in values.cat.categories if str(c) in present]
    seen = list(dict.fromkeys(str(v) for v in values))
    return [m for m in METRICS if m in seen] + [m for m in seen if m not in METRICS]


def wide_metrics(table: pd.DataFrame, *, rows: Sequence[str], spread: bool = False) -> pd.DataFrame:
    """One row per combination of ``rows`` (in the table's order), one column per metric.

    ``table`` has the columns ``rows`` plus metric, mean and std.  Cells are the means
    (shares times 100) or, with ``spread``, the text "mean ± std".  A ``method`` key column
    shows the methods' display labels.
    """
    missing = [c for c in (*rows, *_LONG) if c not in table.columns]
    if missing:
        raise ValueError(f"the metric table lacks the column(s) {', '.join(missing)}")
    keys = list(rows)
    if table.empty:
        return pd.DataFrame(columns=keys)
    metrics = _metric_order(table["metric"])
    frame = table.assign(metric=table["metric"].astype(str))
    percent = frame["metric"].map(is_percent)
    if spread:
        frame = frame.assign(cell=[_spread_text(m, s, p) for m, s, p in zip(frame["mean"], frame["std"], percent)])
    else:
        frame = frame.assign(cell=[_number(float(m), p) for m, p in zip(frame["mean"], percent)])
    for key in keys:
        frame[key] = frame[key].astype(str)
    order = frame[keys].drop_duplicates()
    wide = frame.pivot_table(index=keys, columns="metric", values="cell", aggfunc="first", sort=False)
    wide = wide.reindex(pd.MultiIndex.from_frame(order) if len(keys) > 1 else pd.Index(order[keys[0]]))
    out = wide.reindex(columns=metrics).reset_index()
    out.columns.name = None
    if "method" in out:
        out["method"] = out["method"].map(method_label)
    return out


def metric_columns(wide: pd.DataFrame, rows: Sequence[str]) -> list[str]:
    """The metric columns of a :func:`wide_metrics` frame (every column but the keys)."""
    return [c for c in wide.columns if c not in set(rows)]


def comparison_view(metrics: pd.DataFrame, *, spread: bool = False,
                    escalation_cost: float = DEFAULT_COST) -> pd.DataFrame:
    """A synthetic run's method comparison (mean over seeds): rows scenario x method, the
    share decided just before the system risk, the risk with escalation at
    ``escalation_cost`` just after it."""
    wide = wide_metrics(comparison_table(metrics, escalation_cost=escalation_cost), rows=["scenario", "method"],
                        spread=spread)
    if {"decided_rate", "system_risk"} <= set(wide.columns):
        columns = [c for c in wide.columns if c != "decided_rate"]
        columns.insert(columns.index("system_risk"), "decided_rate")
        wide = wide[columns]
    return wide


def risk_note(metrics: pd.DataFrame, escalation_cost: float = DEFAULT_COST) -> str:
    """The sentence shown under a table with system risk: an escalated case counts 0 there,
    the risk with escalation charges it ``escalation_cost``, and how much D-CEM decided
    itself (lowest and highest scenario mean over seeds)."""
    charged = charged_words(escalation_cost)
    text = ("System risk (escalation free) and harmful consensus count only the cases a method decided itself: an "
            "escalated case counts 0, as if the person who takes it over cost nothing. "
            f"{charged} counts each escalated case {escalation_cost:g} instead (an ordinary error costs 1). "
            "Read them beside Decided.")
    dcem = metrics[(metrics["method"] == "dcem") & (metrics["metric"] == "decided_rate")]
    if dcem.empty:
        return text
    by_scenario = dcem.groupby("scenario")["value"].mean()
    low, high = float(by_scenario.min()), float(by_scenario.max())
    share = f"{low:.0%}" if round(low, 2) == round(high, 2) else f"{low:.0%} to {high:.0%} by scenario"
    return f"{text} D-CEM decided {share} of cases; the baselines decide every case."


CLINICAL_TITLES = ("Risk and harmful consensus by method", "How often D-CEM escalated, and after how many rounds",
                   "D-CEM with and without escalation", "Accuracy, unusable answers and D-CEM's actions")


def clinical_views(metrics: pd.DataFrame, *, spread: bool = False,
                   escalation_cost: float = DEFAULT_COST) -> list[tuple[str, pd.DataFrame]]:
    """A clinical run's tables (the seed's Tables 6, 7 and 1 and the detail table), each as
    (title, wide frame with rows scenario x method), titled by what they show
    (:data:`CLINICAL_TITLES`); the risk tables carry the risk with escalation at
    ``escalation_cost``; ``metrics`` carries a ``dataset`` column (one dataset per run)."""
    builds = (partial(table6, decided=True, escalation_cost=escalation_cost), table7,
              partial(table1, decided=True, escalation_cost=escalation_cost), detail_table)
    titles = tuple(zip(CLINICAL_TITLES, builds))
    out = []
    for title, build in titles:
        long = build(metrics).sort_values(["scenario", "method"], kind="stable")
        out.append((title, wide_metrics(long, rows=["scenario", "method"], spread=spread)))
    return out
