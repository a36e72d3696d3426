"""Plotly figures of the Experiments page: the method comparison (Fig. 3) and per-round curves (Fig. 2)."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dcem.core.vocabulary import method_label

__all__ = ["comparison_figure", "round_curve_figure"]


def comparison_figure(table: pd.DataFrame, metric: str) -> go.Figure:
    """Fig. 3 style: one metric, bars per scenario and method with ± std error bars."""
    part = table[table["metric"] == metric]
    fig = go.Figure()
    for method, rows in part.groupby("method", sort=False, observed=True):
        fig.add_bar(x=rows["scenario"], y=rows["mean"], name=method_label(str(method)),
                    error_y={"type": "data", "array": rows["std"].tolist()})
    fig.update_layout(barmode="group", height=340, title=metric.replace("_", " "), margin={"t": 40, "b": 30},
                      legend={"orientation": "h"})
    return fig


def round_curve_figure(curves: pd.DataFrame, column: str, title: str) -> go.Figure:
    """Fig. 2 style: a per-round curve per scenario with a ± std band over seeds."""
    fig = go.Figure()
    for scenario, rows in curves.groupby("scenario"):
        fig.add_scatter(x=rows["round"], y=rows[column], mode="lines+markers", name=str(scenario),
                        error_y={"type": "data", "array": rows[f"{column}_std"].tolist(), "visible": True})
    fig.update_layout(height=320, title=title, margin={"t": 40, "b": 30}, xaxis={"title": "round", "dtick": 1},
                      legend={"orientation": "h"})
    return fig
