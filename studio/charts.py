"""Plotly figures for the case walkthrough, the review and the calibration sets."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dcem.core.vocabulary import method_label

__all__ = ["energy_figure", "belief_figure", "confusion_figure", "recall_figure", "agent_probability_figure"]

_TERM_COLOURS = {"disagreement": "#4C78A8", "risk": "#F58518", "margin": "#54A24B"}


def energy_figure(rounds: pd.DataFrame, upto: int, *, eps_safe: float, eps_low: float) -> go.Figure:
    """Energy of rounds 1..upto as stacked terms, with the eps_safe / eps_low bands."""
    shown = rounds[rounds["round"] <= upto]
    fig = go.Figure()
    for column, name in (("e_disagreement", "disagreement"), ("e_risk", "risk"), ("e_margin", "margin")):
        fig.add_bar(x=shown["round"], y=shown[column], name=f"{name} term",
                    marker_color=_TERM_COLOURS[name])
    fig.add_scatter(x=shown["round"], y=shown["energy"], mode="lines+markers", name="energy",
                    line={"color": "black"})
    top = max(float(rounds["energy"].max()) * 1.1, eps_low * 1.2)
    fig.add_hrect(y0=0, y1=eps_safe, fillcolor="green", opacity=0.08, line_width=0,
                  annotation_text="certifiable (≤ eps_safe)", annotation_position="bottom left")
    fig.add_hrect(y0=eps_low, y1=top, fillcolor="red", opacity=0.06, line_width=0,
                  annotation_text="stagnation escalates (> eps_low)", annotation_position="top left")
    fig.update_layout(barmode="stack", height=320, margin={"t": 30, "b": 30},
                      xaxis={"title": "round", "dtick": 1, "range": [0.5, float(rounds["round"].max()) + 0.5]},
                      yaxis={"title": "energy", "range": [0, top]}, legend={"orientation": "h"})
    return fig


def belief_figure(labels: Sequence[str], posteriors: Sequence[Sequence[float]], pooled: Sequence[float],
                  reports: Sequence[int], misses: Sequence[int], decision: int) -> go.Figure:
    """Each agent's posterior and the pooled belief Q as grouped bars.

    The reported label of each agent is outlined in black, its dangerous plausible miss
    in red, and the Bayes decision is marked on the pooled bars.
    """
    fig = go.Figure()
    palette = ["#4C78A8", "#F58518", "#B279A2", "#72B7B2"]
    for a, post in enumerate(posteriors):
        outline = ["red" if j == misses[a] else ("black" if j == reports[a] else "rgba(0,0,0,0)")
                   for j in range(len(labels))]
        fig.add_bar(x=list(labels), y=list(post), name=f"agent {a + 1} posterior",
                    marker={"color": palette[a % len(palette)], "line": {"color": outline, "width": 3}})
    pooled_outline = ["black" if j == decision else "rgba(0,0,0,0)" for j in range(len(labels))]
    fig.add_bar(x=list(labels), y=list(pooled), name="pooled Q",
                marker={"color": "#9D9D9D", "line": {"color": pooled_outline, "width": 3}})
    fig.update_layout(barmode="group", height=320, margin={"t": 30, "b": 30},
                      yaxis={"title": "probability", "range": [0, 1]}, legend={"orientation": "h"})
    return fig


def agent_probability_figure(labels: Sequence[str], names: Sequence[str],
                             probabilities: Sequence[Sequence[float] | None],
                             chosen: Sequence[str | None], title: str = "") -> go.Figure:
    """Each agent's reported probability vector as grouped bars over the labels; the label
    it answered is outlined in black.  An agent without a vector (failed turn) gets no bars."""
    fig = go.Figure()
    palette = ["#4C78A8", "#F58518", "#B279A2", "#72B7B2"]
    for a, (name, probs, pick) in enumerate(zip(names, probabilities, chosen)):
        if probs is None:
            continue
        outline = ["black" if lab == pick else "rgba(0,0,0,0)" for lab in labels]
        fig.add_bar(x=list(labels), y=[float(p) for p in probs], name=str(name),
                    marker={"color": palette[a % len(palette)], "line": {"color": outline, "width": 3}})
    fig.update_layout(barmode="group", height=320, margin={"t": 40 if title else 30, "b": 30}, title=title or None,
                      yaxis={"title": "probability", "range": [0, 1]}, legend={"orientation": "h"})
    return fig


ANNOTATED_LABELS = 20
"""Heatmaps with more labels than this show colours and hover values, no cell text."""


def confusion_figure(matrix: np.ndarray, labels: Sequence[str], title: str,
                     counts: np.ndarray | None = None) -> go.Figure:
    """Heatmap, annotated up to :data:`ANNOTATED_LABELS` labels; rows are the true label,
    columns the report."""
    k = len(labels)
    heatmap: dict[str, object] = {}
    if k <= ANNOTATED_LABELS:
        if counts is not None:
            text = [[f"{counts[i, j]}<br>{matrix[i, j]:.2f}" for j in range(k)] for i in range(k)]
        else:
            text = [[f"{matrix[i, j]:.2f}" for j in range(k)] for i in range(k)]
        heatmap = {"text": text, "texttemplate": "%{text}"}
    fig = go.Figure(go.Heatmap(z=matrix, x=list(labels), y=list(labels), colorscale="Blues", zmin=0,
                               showscale=False, **heatmap))
    fig.update_layout(title=title, height=300 if k <= ANNOTATED_LABELS else min(900, 300 + 6 * k),
                      margin={"t": 40, "b": 30},
                      xaxis={"title": "reported"}, yaxis={"title": "true", "autorange": "reversed"})
    return fig


def recall_figure(recall: np.ndarray, labels: Sequence[str], agents: Sequence[str]) -> go.Figure:
    """Per-class recall of every agent as grouped bars (a missing class shows no bar)."""
    fig = go.Figure()
    for a, name in enumerate(agents):
        fig.add_bar(x=list(labels), y=[None if np.isnan(v) else float(v) for v in recall[a]], name=name)
    fig.update_layout(barmode="group", height=280, title="Per-class recall", margin={"t": 40, "b": 30},
                      yaxis={"range": [0, 1]}, legend={"orientation": "h"})
    return fig
