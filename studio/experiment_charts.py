"""Plotly figures of the Experiments page: the method comparison (Fig. 3) and per-round
curves (Fig. 2), with metric names in words, titled axes (shares in percent) and legends
above the plot, clear of the axis titles."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from studio.views.glossary import metric_words
from studio.views.metric_tables import is_percent
from dcem.core.vocabulary import method_label
from studio.whatif_charts import LEGEND_ABOVE

__all__ = ["comparison_figure", "round_curve_figure", "axis_title"]

_MARGIN = {"t": 80, "b": 40}
_TITLE = {"y": 0.97, "yanchor": "top", "x": 0.0, "xanchor": "left"}


def axis_title(metric: str, escalation_cost: float | None = None) -> str:
    """A metric's value axis title in words, with its unit."""
    words = metric_words(metric, escalation_cost=escalation_cost)
    if is_percent(metric):
        return f"{words} (% of cases)"
    return {"avg_rounds": f"{words} (rounds)", "energy": "energy"}.get(metric, f"{words} (mean loss)")


def comparison_figure(table: pd.DataFrame, metric: str, escalation_cost: float | None = None) -> go.Figure:
    """Fig. 3 style: one metric, bars per scenario and method with ± std error bars
    (``escalation_cost``: the cost the table's risk with escalation was computed at)."""
    part = table[table["metric"] == metric]
    fig = go.Figure()
    for method, rows in part.groupby("method", sort=False, observed=True):
        fig.add_bar(x=rows["scenario"], y=rows["mean"], name=method_label(str(method)),
                    error_y={"type": "data", "array": rows["std"].tolist()})
    words = metric_words(metric, escalation_cost=escalation_cost)
    fig.update_layout(barmode="group", height=380, title={"text": words, **_TITLE}, margin=_MARGIN,
                      legend=LEGEND_ABOVE, xaxis={"title": "scenario"},
                      yaxis={"title": axis_title(metric, escalation_cost),
                             "tickformat": ".0%" if is_percent(metric) else None})
    return fig


def round_curve_figure(curves: pd.DataFrame, column: str, title: str) -> go.Figure:
    """Fig. 2 style: a per-round curve per scenario with a ± std band over seeds."""
    fig = go.Figure()
    for scenario, rows in curves.groupby("scenario"):
        fig.add_scatter(x=rows["round"], y=rows[column], mode="lines+markers", name=str(scenario),
                        error_y={"type": "data", "array": rows[f"{column}_std"].tolist(), "visible": True})
    share = column == "accuracy"
    fig.update_layout(height=360, title={"text": title, **_TITLE}, margin=_MARGIN, legend=LEGEND_ABOVE,
                      xaxis={"title": "round", "dtick": 1},
                      yaxis={"title": "pooled accuracy (% of cases)" if share else "energy",
                             "tickformat": ".0%" if share else None,
                             "range": [0.0, 1.02] if share else None})  # a share: never an axis past 100 %
    return fig
