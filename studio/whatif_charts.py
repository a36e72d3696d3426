"""Plotly figures of the what-if page: the outcome mix and the trade-off sweep."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

__all__ = ["action_mix_figure", "tradeoff_figure"]


def action_mix_figure(now: dict[str, float], before: dict[str, float]) -> go.Figure:
    """Share of each terminal action under the current and the original settings."""
    names = [k for k in now if now.get(k, 0) or before.get(k, 0)]
    fig = go.Figure()
    fig.add_bar(x=names, y=[before.get(k, 0.0) for k in names], name="original settings",
                marker_color="#BAB0AC")
    fig.add_bar(x=names, y=[now.get(k, 0.0) for k in names], name="current settings", marker_color="#4C78A8")
    fig.update_layout(barmode="group", height=300, title="Outcome mix", yaxis={"range": [0, 1]},
                      margin={"t": 40, "b": 30}, legend={"orientation": "h"})
    return fig


def tradeoff_figure(sweep: pd.DataFrame, parameter: str, current: float, current_metrics: dict[str, float],
                    y: str) -> go.Figure:
    """Escalation rate against ``y`` while one parameter sweeps; the current point marked."""
    ok = sweep[sweep["valid"]]
    fig = go.Figure()
    fig.add_scatter(x=ok["escalation_rate"], y=ok[y], mode="lines+markers", name=f"sweep of {parameter}",
                    text=[f"{parameter} = {v:.3g}" for v in ok["value"]], hoverinfo="text+x+y")
    fig.add_scatter(x=[current_metrics["escalation_rate"]], y=[current_metrics[y]], mode="markers",
                    marker={"size": 14, "color": "red", "symbol": "x"}, name=f"current ({parameter} = {current:.3g})")
    fig.update_layout(height=320, title=f"Escalation rate vs {y.replace('_', ' ')}", margin={"t": 40, "b": 30},
                      xaxis={"title": "escalation rate"}, yaxis={"title": y.replace("_", " ")},
                      legend={"orientation": "h"})
    return fig
