"""Plotly figures of the Agent group page: the per-round answer distributions of a SAG
debate and, for a D-CEM-mediated run, the mediator's energy and action per round."""
from __future__ import annotations

from typing import Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

__all__ = ["distribution_figure", "mediator_figure", "ACTION_COLOURS"]

ACTION_COLOURS = {"CONTINUE": "#4C78A8", "DIFFERENTIAL_STEER": "#F58518", "STOP_AND_DECIDE": "#54A24B",
                  "STOP_AND_ESCALATE": "#E45756"}
_ROLE_RANK = {"reasoning": 0, "knowledge": 1, "safety": 2, "judge": 3}


def _agents(frame: pd.DataFrame) -> list[str]:
    """The agents in role order (R1.., K1.., S1.., J1..)."""
    pairs = frame[["agent", "role"]].drop_duplicates()
    ranked = sorted(pairs.itertuples(index=False),
                    key=lambda p: (_ROLE_RANK.get(p.role, 9), len(p.agent), p.agent))
    return [p.agent for p in ranked]


def distribution_figure(frame: pd.DataFrame, letters: Sequence[str]) -> go.Figure:
    """One heat map per round: agents (rows) by options (columns), coloured by probability.

    ``frame`` is :func:`studio.views.sag_group_view.distributions` (round, agent, role, option,
    probability); an agent that did not answer in a round leaves its row blank there.
    """
    rounds = sorted(frame["round"].unique()) if not frame.empty else [0]
    agents = _agents(frame) if not frame.empty else []
    fig = make_subplots(rows=1, cols=len(rounds), shared_yaxes=True, horizontal_spacing=0.02,
                        subplot_titles=[f"round {r}" for r in rounds])
    for col, r in enumerate(rounds, start=1):
        grid = (frame[frame["round"] == r].pivot_table(index="agent", columns="option", values="probability")
                .reindex(index=agents, columns=list(letters)))
        fig.add_trace(go.Heatmap(z=grid.to_numpy(), x=list(letters), y=agents, zmin=0.0, zmax=1.0,
                                 colorscale="Blues", showscale=col == len(rounds), texttemplate="%{z:.2f}",
                                 colorbar={"title": "p"},
                                 hovertemplate="round " + str(r) + "<br>%{y} on %{x}: %{z:.3f}<extra></extra>"),
                      row=1, col=col)
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    fig.update_layout(title="Answer distribution of each agent, by round", height=140 + 26 * max(len(agents), 2),
                      margin={"t": 70, "b": 30, "l": 40, "r": 20})
    return fig


def _short(action: str) -> str:
    """An action's short name for a marker label: STEER, DECIDE, ESCALATE, CONTINUE."""
    return action.replace("DIFFERENTIAL_", "").replace("STOP_AND_", "")


def mediator_figure(rounds: pd.DataFrame) -> go.Figure:
    """The D-CEM mediator per round: energy (line, markers coloured and labelled by the
    action taken and the decision) and the decision margin on a second axis.

    ``rounds`` is :func:`studio.views.sag_group_view.mediator_table` (round, action, decision, energy,
    margin, ...).
    """
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_scatter(x=rounds["round"], y=rounds["energy"], mode="lines+markers+text", name="energy",
                    text=[f"{_short(a)} {d}" for a, d in zip(rounds["action"], rounds["decision"])],
                    textposition="top center", line={"color": "black"},
                    marker={"size": 14, "color": [ACTION_COLOURS.get(a, "#9D9D9D") for a in rounds["action"]]})
    fig.add_scatter(x=rounds["round"], y=rounds["margin"], mode="lines+markers", name="margin",
                    line={"color": "#B279A2", "dash": "dash"}, secondary_y=True)
    top = float(rounds["energy"].max()) * 1.3 if not rounds.empty else 1.0
    fig.update_layout(title="D-CEM energy and action per round", height=340, margin={"t": 50, "b": 30},
                      legend={"orientation": "h"})
    last = int(rounds["round"].max()) if not rounds.empty else 1
    fig.update_xaxes(title="round", dtick=1, range=[0.4, last + 0.6])
    fig.update_yaxes(title="energy", range=[0, max(top, 1e-6)], secondary_y=False)
    fig.update_yaxes(title="margin", secondary_y=True)
    return fig
