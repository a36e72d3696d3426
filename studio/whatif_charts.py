"""Plotly figures of the what-if page: the outcome mix and the trade-off sweep.

Legends sit above the plotting area (horizontal, anchored at its top edge), so they never
cover an axis title; each trade-off point is labelled with the swept value it stands for,
except where the label would overprint another's.  The trade-off chart's legend sits at the
bottom of the figure instead (:data:`LEGEND_BELOW`): in a narrow column it takes three
lines, which above the plot ran into the chart's title.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go

from studio.views.glossary import metric_words
from studio.views.metric_tables import is_percent

__all__ = ["LEGEND_ABOVE", "LEGEND_BELOW", "LABEL_ROOM", "OUTCOME_WORDS", "action_mix_figure", "tradeoff_figure",
           "point_label", "point_labels", "axis_range"]

LEGEND_ABOVE: dict[str, Any] = {"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "left", "x": 0.0}
LEGEND_BELOW: dict[str, Any] = {"orientation": "h", "yref": "container", "yanchor": "bottom", "y": 0.0,
                                "xanchor": "left", "x": 0.0}
_MARGIN = {"t": 90, "b": 40, "l": 50, "r": 20}
_TITLE = {"y": 0.97, "yanchor": "top", "x": 0.0, "xanchor": "left"}


def point_label(value: float) -> str:
    """A swept value as printed on its marker (three significant digits)."""
    return f"{float(value):.3g}"


def point_labels(values: Sequence[float], xs: Sequence[float], ys: Sequence[float],
                 spans: tuple[float, float] | None = None) -> list[str]:
    """One label per point; consecutive points on the same spot share one label ("a to b"
    on the first, nothing on the others) so that coinciding labels do not overprint.  With
    ``spans`` (the x and y axis lengths), a label is also left off when it would overlap a
    label already placed (:data:`LABEL_ROOM`: a character's width and a line's height as
    shares of the axes); its value is still in the hover text."""
    labels = [""] * len(values)
    placed: list[tuple[float, float, int]] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and (xs[j + 1], ys[j + 1]) == (xs[i], ys[i]):
            j += 1
        text = point_label(values[i]) if j == i else f"{point_label(values[i])} to {point_label(values[j])}"
        if not (spans is not None and any(_overlap(xs[i], ys[i], len(text), x, y, n, spans) for x, y, n in placed)):
            labels[i] = text
            placed.append((xs[i], ys[i], len(text)))
        i = j + 1
    return labels


LABEL_ROOM = (0.022, 0.075)  # one character's width and one line's height, as shares of the x and y axes


def _overlap(x1: float, y1: float, n1: int, x2: float, y2: float, n2: int, spans: tuple[float, float]) -> bool:
    """Whether two labels centred above (x1, y1) and (x2, y2), n1 and n2 characters long, overlap."""
    width = LABEL_ROOM[0] * spans[0] * (n1 + n2 + 2) / 2.0
    return abs(x1 - x2) < width and abs(y1 - y2) < LABEL_ROOM[1] * spans[1]


OUTCOME_WORDS = {"STOP_AND_DECIDE": "decided", "STOP_AND_ESCALATE": "escalated to a human",
                 "PENDING": "no outcome in the stored rounds"}


def action_mix_figure(now: dict[str, float], before: dict[str, float]) -> go.Figure:
    """Share of each terminal action (in words) under the current and the original settings."""
    names = [k for k in now if now.get(k, 0) or before.get(k, 0)]
    fig = go.Figure()
    for name, mix, colour in (("original settings", before, "#BAB0AC"), ("current settings", now, "#4C78A8")):
        shares = [mix.get(k, 0.0) for k in names]
        fig.add_bar(x=[OUTCOME_WORDS.get(k, k) for k in names], y=shares, name=name, marker_color=colour, text=[f"{s:.0%}" for s in shares],
                    textposition="outside")
    fig.update_layout(barmode="group", height=340, title={"text": "Outcome mix (share of cases)", **_TITLE},
                      yaxis={"range": [0, 1.15], "title": "share of cases", "tickformat": ".0%"},
                      xaxis={"title": "outcome"}, margin=_MARGIN, legend=LEGEND_ABOVE)
    return fig


def axis_range(values: Sequence[float], share: bool) -> list[float]:
    """A value axis from 0 that holds every value: a share's axis stops at 1 (100 %), and a
    small top is widened so one point does not fill the plot."""
    finite = [float(v) for v in values if pd.notna(v)]
    top = max(max(finite, default=0.0) * 1.15, 0.05)
    return [0.0, min(top, 1.0)] if share else [0.0, top]


def tradeoff_figure(sweep: pd.DataFrame, parameter: str, current: float, current_metrics: Mapping[str, float],
                    y: str, original_metrics: Mapping[str, float] | None = None, *,
                    escalation_cost: float | None = None) -> go.Figure:
    """Escalation share against ``y`` while one parameter sweeps, each point labelled with its
    value; the current settings (and the run's own, when given) marked.  Shares are drawn in
    percent on axes within 0-100 %, and every marker lies inside the plot."""
    ok = sweep[sweep["valid"]]
    words, share = metric_words(y, escalation_cost=escalation_cost), is_percent(y)
    y_top = axis_range(list(ok[y]) + [current_metrics[y]] + ([original_metrics[y]] if original_metrics else []),
                       share)[1]
    fig = go.Figure()
    xs, ys = list(ok["escalation_rate"]), list(ok[y])
    # the markers go first, so the curve's value labels are drawn over them, not under them;
    # legendrank keeps the legend in reading order (the curve, the run's own, the current)
    if original_metrics is not None:
        fig.add_scatter(x=[original_metrics["escalation_rate"]], y=[original_metrics[y]], mode="markers",
                        marker={"size": 12, "color": "#7F7F7F", "symbol": "circle-open"}, name="run's own settings",
                        legendrank=2)
        xs.append(original_metrics["escalation_rate"])
        ys.append(original_metrics[y])
    fig.add_scatter(x=[current_metrics["escalation_rate"]], y=[current_metrics[y]], mode="markers",
                    marker={"size": 14, "color": "red", "symbol": "x", "opacity": 0.8},
                    name=f"current settings ({parameter} = {point_label(current)})", legendrank=3)
    xs.append(current_metrics["escalation_rate"])
    ys.append(current_metrics[y])
    fig.add_scatter(x=ok["escalation_rate"], y=ok[y], mode="lines+markers+text", name=f"{parameter} swept",
                    line={"color": "#4C78A8"}, marker={"color": "#4C78A8"},
                    text=point_labels(ok["value"].tolist(), ok["escalation_rate"].tolist(), ok[y].tolist(),
                                      spans=(1.04, y_top)),
                    textposition="top center", textfont={"size": 12, "color": "#1f3b73"}, customdata=ok["value"],
                    legendrank=1,
                    hovertemplate=f"{parameter} = %{{customdata:.4g}}<br>escalated %{{x:.1%}}<br>"
                                  f"{words} %{{y:{'.1%' if share else '.3f'}}}<extra></extra>")
    fig.update_layout(height=440, title={"text": f"Escalated vs {words.lower()}", **_TITLE},
                      margin={**_MARGIN, "t": 50, "b": 130},
                      xaxis={"title": "escalated (% of cases)", "tickformat": ".0%", "range": [-0.02, 1.02]},
                      yaxis={"title": f"{words.lower()} (% of cases)" if share else f"{words.lower()} (mean loss)",
                             "tickformat": ".1%" if share else None, "range": axis_range(ys, share)},
                      legend=LEGEND_BELOW)
    return fig
