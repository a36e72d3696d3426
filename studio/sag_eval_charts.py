"""Plotly figures of the Group evaluation page: ROC curves of the refusal score,
robustness bars, consistency bars, and accuracy by group size and backbone.

Each figure takes a tidy frame of :mod:`sag.evaluation.views` and draws nothing more
than what is in it.
"""
from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

__all__ = ["roc_figure", "robustness_figure", "consistency_figure", "size_figure"]


def roc_figure(points: pd.DataFrame) -> go.Figure:
    """One ROC curve per system (``views.roc_points``: group, fpr, tpr, auc) and the
    chance diagonal; the legend gives each curve's area."""
    fig = go.Figure()
    fig.add_scatter(x=[0, 1], y=[0, 1], mode="lines", name="chance", line={"color": "grey", "dash": "dash"})
    for group, rows in points.groupby("group", sort=False):
        auc = rows["auc"].iloc[0]
        label = f"{group} (AUC {auc:.2f})" if pd.notna(auc) else str(group)
        fig.add_scatter(x=rows["fpr"], y=rows["tpr"], mode="lines+markers", name=label, line={"shape": "hv"})
    fig.update_layout(title="Refusal score: harmful refused vs benign refused", height=420,
                      margin={"t": 50, "b": 40}, legend={"orientation": "h", "y": -0.2})
    fig.update_xaxes(title="benign requests refused (false-positive rate)", range=[-0.02, 1.02])
    fig.update_yaxes(title="harmful requests refused (true-positive rate)", range=[-0.02, 1.02])
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


def size_figure(points: pd.DataFrame) -> go.Figure:
    """Mean accuracy over the benchmarks (percent) of each group, one row per group ordered
    by the number of answering agents (named in the row label), coloured by backbone
    (``views.size_backbone_points``).  One row a group keeps every label readable however
    many groups share a size."""
    frame = points.assign(row=[f"{g} · {int(n)} agent{'s' if int(n) != 1 else ''}"
                               for g, n in zip(points["group"], points["agents"])])
    order = frame.sort_values(["agents", "group"], ascending=[False, False])["row"].tolist()
    fig = px.scatter(frame, x="mean accuracy", y="row", color="backbone",
                     hover_data={"agents": True, "benchmarks": True, "row": False},
                     category_orders={"row": order},
                     labels={"row": "", "mean accuracy": "mean accuracy over the benchmarks (%)"})
    fig.update_traces(marker={"size": 14})
    top = float(points["mean accuracy"].max()) if len(points) else 0.0
    fig.update_layout(title="Accuracy by group size and backbone", height=max(260, 60 + 34 * len(frame)),
                      margin={"t": 50, "b": 40})
    fig.update_xaxes(range=[0, max(top * 1.15, 10.0)])
    return fig
