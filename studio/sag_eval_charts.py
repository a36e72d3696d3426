"""Plotly figures of the Group evaluation page: ROC curves of the refusal score,
robustness bars, consistency bars, and accuracy by group size and backbone.

Each figure takes a tidy frame of :mod:`studio.views.sag_eval_view` and draws nothing more
than what is in it.
"""
from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

__all__ = ["roc_figure", "robustness_figure", "consistency_figure", "size_figure"]


PALETTE = (px.colors.qualitative.Dark24 + px.colors.qualitative.Light24)  # enough distinct colours for every system


def roc_figure(points: pd.DataFrame) -> go.Figure:
    """One ROC curve per system (``views.roc_points``: group, fpr, tpr, auc), each its own
    colour, and the chance diagonal; the legend, at the right, gives each curve's area."""
    fig = go.Figure()
    fig.add_scatter(x=[0, 1], y=[0, 1], mode="lines", name="chance", line={"color": "grey", "dash": "dash"})
    for i, (group, rows) in enumerate(points.groupby("group", sort=False)):
        auc = rows["auc"].iloc[0]
        label = f"{group} (AUC {auc:.2f})" if pd.notna(auc) else str(group)
        fig.add_scatter(x=rows["fpr"], y=rows["tpr"], mode="lines+markers", name=label,
                        line={"shape": "hv", "color": PALETTE[i % len(PALETTE)]})
    fig.update_layout(title={"text": "Refusal score: harmful refused vs benign refused", "y": 0.98, "yanchor": "top"},
                      height=480, margin={"t": 60, "b": 50, "r": 10},
                      legend={"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1.0, "yanchor": "top"})
    fig.update_xaxes(title="benign refused (false-positive rate)", range=[-0.02, 1.02])
    fig.update_yaxes(title="harmful refused (true-positive rate)", range=[-0.02, 1.02])
    return fig


def _error_bars(frame: pd.DataFrame) -> dict[str, pd.Series]:
    return {"error_y": (frame["high"] - frame["accuracy"]).clip(lower=0),
            "error_y_minus": (frame["accuracy"] - frame["low"]).clip(lower=0)}


def _faceted(fig: go.Figure, title: str, height: int) -> go.Figure:
    """Title and size of a figure with one panel per benchmark, panels named by benchmark alone."""
    fig.update_layout(title=title, height=height, margin={"t": 70, "b": 40})
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=", 1)[-1]))
    return fig


def robustness_figure(points: pd.DataFrame) -> go.Figure:
    """Accuracy (percent, 95 % interval) on clean, noisy and distractor items, grouped by
    system, one panel per benchmark (``views.robustness_points``)."""
    frame = points.fillna({"low": points["accuracy"], "high": points["accuracy"]})
    fig = px.bar(frame, x="group", y="accuracy", color="condition", barmode="group", facet_col="benchmark",
                 **_error_bars(frame), range_y=[0, 105],
                 labels={"accuracy": "accuracy (%)", "group": "", "condition": "items"})
    return _faceted(fig, "Accuracy on clean and perturbed items", 420)


def consistency_figure(points: pd.DataFrame) -> go.Figure:
    """Standard deviation of accuracy over repeated runs (points) per decoding setting,
    one bar per system, one panel per benchmark (``views.consistency_points``)."""
    fig = px.bar(points, x="setting", y="std", color="group", barmode="group", facet_col="benchmark",
                 labels={"std": "std of accuracy (points)", "setting": "decoding setting", "group": "system"})
    return _faceted(fig, "Run-to-run spread of accuracy (lower is steadier)", 400)


def size_figure(points: pd.DataFrame, chance: float | None = None) -> go.Figure:
    """Accuracy over the benchmarks' items (percent, 95 % interval) of each group, one row
    per group ordered by the number of answering agents (named in the row label), coloured
    by backbone (``views.size_backbone_points``), with chance (percent) as a dashed line.
    One row a group keeps every label readable however many groups share a size."""
    frame = points.assign(row=[f"{g} · {int(n)} agent{'s' if int(n) != 1 else ''}"
                               for g, n in zip(points["group"], points["agents"])])
    order = frame.sort_values(["agents", "group"], ascending=[False, False])["row"].tolist()
    fig = px.scatter(frame, x="accuracy", y="row", color="backbone",
                     error_x=(frame["high"] - frame["accuracy"]).clip(lower=0),
                     error_x_minus=(frame["accuracy"] - frame["low"]).clip(lower=0),
                     hover_data={"agents": True, "benchmarks": True, "row": False},
                     category_orders={"row": order},
                     labels={"row": "", "accuracy": "accuracy over the benchmarks' items (%, 95 % interval)"})
    fig.update_traces(marker={"size": 14})
    top = float(points["high"].max()) if len(points) else 0.0
    if chance is not None:
        fig.add_vline(x=100 * chance, line={"color": "grey", "dash": "dash"},
                      annotation_text=f"chance {100 * chance:.0f} %", annotation_position="top")
        top = max(top, 100 * chance)
    fig.update_layout(title={"text": "Accuracy by group size and backbone", "y": 0.98, "yanchor": "top"},
                      height=max(300, 90 + 34 * len(frame)), margin={"t": 70, "b": 40})
    fig.update_xaxes(range=[0, min(max(top * 1.1, 10.0), 100.0)])
    return fig
