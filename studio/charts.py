"""Plotly figures for the case walkthrough, the review and the calibration sets.

Agents and energy terms have disjoint palettes (:data:`AGENT_PALETTE`,
:data:`TERM_COLOURS`); every outline colour has a legend entry; the thresholds are
labelled lines with their values; with :data:`HORIZONTAL_AT` labels or more, bar charts
turn horizontal and long label names wrap (:func:`wrap_label`).
"""
from __future__ import annotations

import math

import textwrap
from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from studio.views.round_reason import fmt_pair

__all__ = ["energy_figure", "belief_figure", "confusion_figure", "recall_figure", "agent_probability_figure",
           "AGENT_PALETTE", "TERM_COLOURS", "POOLED_COLOUR", "OUTLINES", "HORIZONTAL_AT", "wrap_label",
           "threshold_labels", "threshold_shifts", "probability_top"]

AGENT_PALETTE = ("#1F77B4", "#FF7F0E", "#17BECF", "#E377C2", "#BCBD22", "#8C564B", "#393B79", "#FFBB78")
"""One colour per agent (cycled), shared by the belief and the agents' probability charts."""
TERM_COLOURS = {"disagreement": "#BD9E39", "risk": "#AD494A", "margin": "#5254A3"}
"""The energy terms' colours: no agent colour among them."""
POOLED_COLOUR = "#9D9D9D"
OUTLINES = {"report": "#000000", "miss": "#D62728", "decision": "#FFB000"}
"""Bar outlines: an agent's reported label, its dangerous plausible miss, the Bayes decision."""
_NONE = "rgba(0,0,0,0)"
HORIZONTAL_AT = 8
"""Bar charts over this many labels or more are drawn horizontally."""
SAFE_COLOUR, LOW_COLOUR = "#2CA02C", "#D62728"
_LEGEND_BELOW = {"orientation": "h", "yanchor": "top", "y": -0.18, "x": 0}


def wrap_label(label: str, width: int = 14) -> str:
    """A label for an axis: underscores as spaces, wrapped at ``width`` characters with <br>."""
    lines = textwrap.wrap(str(label).replace("_", " "), width, break_long_words=False, break_on_hyphens=False)
    return "<br>".join(lines) or str(label)


def threshold_labels(eps_safe: float, eps_low: float) -> tuple[str, str]:
    """The threshold lines' labels with their values, e.g. ('eps_safe 0.60', 'eps_low 1.20')."""
    safe, low = fmt_pair(eps_safe, eps_low)
    return f"eps_safe {safe}", f"eps_low {low}"


def _key(fig: go.Figure, name: str, colour: str, *, symbol: str = "square-open") -> None:
    """A legend-only entry explaining a colour or an outline."""
    fig.add_scatter(x=[None], y=[None], mode="markers", name=name, hoverinfo="skip",
                    marker={"symbol": symbol, "size": 13, "color": colour, "line": {"width": 3, "color": colour}})


def threshold_shifts(eps_safe: float, eps_low: float, top: float, height: float = 400.0,
                     apart: float = 16.0) -> tuple[float, float]:
    """Vertical pixel shifts of the eps_low and eps_safe labels (drawn right of the plot, on
    their lines) that keep them at least ``apart`` pixels apart when the lines are close."""
    gap = (eps_low - eps_safe) / max(top, 1e-12) * height
    if gap >= apart:
        return 0.0, 0.0
    push = (apart - gap) / 2.0
    return push, -push


def energy_figure(rounds: pd.DataFrame, upto: int, *, eps_safe: float, eps_low: float) -> go.Figure:
    """Energy of rounds 1..upto as stacked terms, with eps_safe / eps_low as labelled lines
    over their bands (certifiable below eps_safe, stagnation escalates above eps_low)."""
    shown = rounds[rounds["round"] <= upto]
    fig = go.Figure()
    for column, name in (("e_disagreement", "disagreement"), ("e_risk", "risk"), ("e_margin", "margin")):
        fig.add_bar(x=shown["round"], y=shown[column], name=f"{name} term", marker_color=TERM_COLOURS[name])
    fig.add_scatter(x=shown["round"], y=shown["energy"], mode="lines+markers", name="energy",
                    line={"color": "black"})
    top = max(float(rounds["energy"].max()) * 1.1, eps_low * 1.2)
    safe_text, low_text = threshold_labels(eps_safe, eps_low)
    fig.add_hrect(y0=0, y1=eps_safe, fillcolor=SAFE_COLOUR, opacity=0.08, line_width=0)
    fig.add_hrect(y0=eps_low, y1=top, fillcolor=LOW_COLOUR, opacity=0.06, line_width=0)
    fig.add_hline(y=eps_safe, line={"color": SAFE_COLOUR, "dash": "dash", "width": 2})
    fig.add_hline(y=eps_low, line={"color": LOW_COLOUR, "dash": "dot", "width": 2})
    low_shift, safe_shift = threshold_shifts(eps_safe, eps_low, top)
    for y, text, colour, shift in ((eps_low, low_text, LOW_COLOUR, low_shift),
                                   (eps_safe, safe_text, SAFE_COLOUR, safe_shift)):
        fig.add_annotation(x=1.0, xref="paper", xanchor="left", y=y, yref="y", yshift=shift, text=text,
                           showarrow=False, font={"color": colour})
    _key(fig, f"green band: certifiable, energy ≤ {safe_text}", SAFE_COLOUR, symbol="square")
    _key(fig, f"red band: a stall escalates, energy > {low_text}", LOW_COLOUR, symbol="square")
    fig.update_layout(barmode="stack", height=460, margin={"t": 30, "b": 30, "r": 110},
                      xaxis={"title": "round", "dtick": 1, "range": [0.5, float(rounds["round"].max()) + 0.5]},
                      yaxis={"title": "energy", "range": [0, top]}, legend=_LEGEND_BELOW)
    return fig


def _bars(fig: go.Figure, ticks: list[str], values: Sequence[float | None], *, horizontal: bool,
          name: str, colour: str, outline: list[str]) -> None:
    axes = {"y": ticks, "x": list(values), "orientation": "h"} if horizontal else {"x": ticks, "y": list(values)}
    fig.add_bar(name=name, marker={"color": colour, "line": {"color": outline, "width": 3}}, **axes)


def probability_top(values: Sequence[float | None]) -> float:
    """The probability axis's top: a little above the largest bar, in steps of 0.1, at most 1."""
    largest = max((float(v) for v in values if v is not None), default=1.0)
    return min(1.0, max(0.1, math.ceil(largest * 1.1 * 10.0) / 10.0))


def _bar_layout(fig: go.Figure, n_labels: int, n_series: int, *, horizontal: bool, title: str = "") -> None:
    bars = [v for trace in fig.data if trace.type == "bar" for v in (trace.x if horizontal else trace.y) or ()]
    value_axis = {"title": "probability", "range": [0, probability_top(bars)]}
    if horizontal:
        layout = {"xaxis": value_axis, "yaxis": {"autorange": "reversed", "automargin": True},
                  "height": max(420, 200 + 14 * n_labels * max(n_series, 1))}
    else:
        layout = {"yaxis": value_axis, "height": 460}
    fig.update_layout(barmode="group", margin={"t": 40 if title else 30, "b": 30}, title=title or None,
                      legend=_LEGEND_BELOW, **layout)


def belief_figure(labels: Sequence[str], posteriors: Sequence[Sequence[float]], pooled: Sequence[float],
                  reports: Sequence[int], misses: Sequence[int], decision: int,
                  names: Sequence[str] | None = None) -> go.Figure:
    """Each agent's posterior and the pooled belief Q as grouped bars (horizontal from
    :data:`HORIZONTAL_AT` labels on).

    The reported label of each agent is outlined in black, its dangerous plausible miss
    in red, and the Bayes decision in amber on the pooled bars; the legend explains each.
    """
    fig = go.Figure()
    horizontal = len(labels) >= HORIZONTAL_AT
    ticks = [wrap_label(lab) for lab in labels]
    for a, post in enumerate(posteriors):
        outline = [OUTLINES["miss"] if j == misses[a] else (OUTLINES["report"] if j == reports[a] else _NONE)
                   for j in range(len(labels))]
        name = f"{names[a]} posterior" if names and a < len(names) else f"agent {a + 1} posterior"
        _bars(fig, ticks, [float(p) for p in post], horizontal=horizontal, name=name,
              colour=AGENT_PALETTE[a % len(AGENT_PALETTE)], outline=outline)
    _bars(fig, ticks, [float(p) for p in pooled], horizontal=horizontal, name="pooled Q", colour=POOLED_COLOUR,
          outline=[OUTLINES["decision"] if j == decision else _NONE for j in range(len(labels))])
    _key(fig, "black outline: the agent's reported label", OUTLINES["report"])
    _key(fig, "red outline: its dangerous plausible miss", OUTLINES["miss"])
    _key(fig, "amber outline: the Bayes decision (pooled Q)", OUTLINES["decision"])
    _bar_layout(fig, len(labels), len(posteriors) + 1, horizontal=horizontal)
    return fig


def agent_probability_figure(labels: Sequence[str], names: Sequence[str],
                             probabilities: Sequence[Sequence[float] | None],
                             chosen: Sequence[str | None], title: str = "") -> go.Figure:
    """Each agent's reported probability vector as grouped bars over the labels (horizontal
    from :data:`HORIZONTAL_AT` labels on); the label it answered is outlined in black.  An
    agent without a vector (failed turn) gets no bars."""
    fig = go.Figure()
    horizontal = len(labels) >= HORIZONTAL_AT
    ticks = [wrap_label(lab) for lab in labels]
    for a, (name, probs, pick) in enumerate(zip(names, probabilities, chosen)):
        if probs is None:
            continue
        outline = [OUTLINES["report"] if lab == pick else _NONE for lab in labels]
        _bars(fig, ticks, [float(p) for p in probs], horizontal=horizontal, name=str(name),
              colour=AGENT_PALETTE[a % len(AGENT_PALETTE)], outline=outline)
    _key(fig, "black outline: the label the agent answered", OUTLINES["report"])
    _bar_layout(fig, len(labels), len(names), horizontal=horizontal, title=title)
    return fig


ANNOTATED_LABELS = 20
"""Heatmaps with more labels than this show colours and hover values, no cell text."""


def confusion_figure(matrix: np.ndarray, labels: Sequence[str], title: str,
                     counts: np.ndarray | None = None) -> go.Figure:
    """Heatmap, annotated up to :data:`ANNOTATED_LABELS` labels; rows are the true label,
    columns the report; wrapped label names and a colour bar (share of the row)."""
    k = len(labels)
    heatmap: dict[str, object] = {}
    if k <= ANNOTATED_LABELS:
        if counts is not None:
            text = [[f"{counts[i, j]}<br>{matrix[i, j]:.2f}" for j in range(k)] for i in range(k)]
        else:
            text = [[f"{matrix[i, j]:.2f}" for j in range(k)] for i in range(k)]
        heatmap = {"text": text, "texttemplate": "%{text}"}
    ticks = [wrap_label(lab, 10) for lab in labels]
    fig = go.Figure(go.Heatmap(z=matrix, x=ticks, y=ticks, colorscale="Blues", zmin=0, showscale=True,
                               colorbar={"title": {"text": "share<br>of row"}, "thickness": 10}, **heatmap))
    fig.update_layout(title=title, height=300 if k < HORIZONTAL_AT else min(900, 260 + 20 * k),
                      margin={"t": 40, "b": 30},
                      xaxis={"title": "reported", "automargin": True},
                      yaxis={"title": "true", "autorange": "reversed", "automargin": True})
    return fig


def recall_figure(recall: np.ndarray, labels: Sequence[str], agents: Sequence[str],
                  title: str = "Per-class recall") -> go.Figure:
    """Per-class recall of every agent as grouped bars (a missing class shows no bar)."""
    fig = go.Figure()
    for a, name in enumerate(agents):
        fig.add_bar(x=list(labels), y=[None if np.isnan(v) else float(v) for v in recall[a]], name=name)
    fig.update_layout(barmode="group", height=280, title=title, margin={"t": 40, "b": 30},
                      yaxis={"range": [0, 1]}, legend={"orientation": "h"})
    return fig
