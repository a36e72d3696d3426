"""Streamlit views of a case: the case text, the agents, their turns, a mediated round's
charts and metrics, the notices under a round, and the agents' last answers."""
from __future__ import annotations

from typing import Sequence

import pandas as pd
import streamlit as st

from dcem.analysis.review_view import LastAnswersView
from dcem.analysis.walkthrough import CaseTrace, probability_table
from dcem.analysis.walkthrough_view import Notice, RoundView
from studio.charts import agent_probability_figure, belief_figure, energy_figure

__all__ = ["show_case_text", "show_agents", "show_turns", "show_mediator_round", "show_notices",
           "show_last_answers"]


def show_case_text(text: str | None, *, expanded: bool = True) -> None:
    """The case text the agents read, in an expander (open by default)."""
    with st.expander("Case text (what the agents read)", expanded=expanded):
        if text is None:
            st.caption("No case text is stored for this case.")
        else:
            st.markdown(text)


def show_agents(agents: pd.DataFrame) -> None:
    """The agents' names, models, role sentences and calibration accuracy."""
    if agents.empty:
        return
    table = agents[["name", "model", "role", "calibration_accuracy"]].rename(
        columns={"name": "agent", "calibration_accuracy": "CAL accuracy"})
    st.dataframe(table, hide_index=True,
                 column_config={"role": st.column_config.TextColumn("role", width="large")})


def show_turns(turns: pd.DataFrame, labels: Sequence[str], *, key: str, title: str = "",
               models: dict[int, str] | None = None) -> None:
    """One round's agent turns: their probability vectors (bars and a table) and, per
    agent, the mediator note it received, its answer, its raw reply and any error."""
    if turns.empty:
        st.caption("No agent turn is stored for this round.")
        return
    st.plotly_chart(agent_probability_figure(labels, turns["agent_name"].tolist(), turns["probabilities"].tolist(),
                                             turns["label"].tolist(), title), key=f"{key}_probs")
    with st.expander("Probability table", expanded=False):
        st.dataframe(probability_table(turns, labels).round(3), key=f"{key}_table")
    cols = st.columns(len(turns))
    for col, turn in zip(cols, turns.itertuples(index=False)):
        model = (models or {}).get(int(turn.agent))
        who = f"**{turn.agent_name}**" + (f" ({model})" if model else "")
        if turn.label is None:
            col.markdown(f"{who}: :red[**no usable answer**]")
        else:
            p = turn.probabilities[list(labels).index(turn.label)] if turn.probabilities is not None else None
            col.markdown(f"{who} answered **{turn.label}**" + (f" (p = {p:.3f})" if p is not None else ""))
        if turn.error:
            col.error(f"⚠ {turn.agent_name}: {turn.error}".replace("\n", " "))
        if turn.note:
            col.caption("Mediator note received before answering:")
            col.info(turn.note)
        else:
            col.caption("No mediator note: the agent read the case only.")
        with col.expander("Raw reply", expanded=False):
            st.code(turn.reply if turn.reply else "(no reply)", language=None, wrap_lines=True)
        if turn.cached:
            col.caption("Answered from the call log (no new model call).")


def show_mediator_round(trace: CaseTrace, view: RoundView, *, key: str) -> None:
    """A mediated round: the energy and belief charts, the four metrics and one line per agent."""
    cfg, row = trace.config, view.row
    left, right = st.columns(2)
    left.plotly_chart(energy_figure(trace.rounds, view.number, eps_safe=cfg.eps_safe, eps_low=cfg.eps_low),
                      key=f"{key}_energy")
    right.plotly_chart(belief_figure(trace.labels, row["posteriors"], row["pooled"], row["reports"],
                                     row["dangerous_miss"], int(row["decision"])), key=f"{key}_belief")
    for col, (name, value) in zip(st.columns(len(view.metrics)), view.metrics):
        col.metric(name, value)
    for line in view.agent_lines:
        st.markdown(line)


def show_notices(notices: Sequence[Notice]) -> None:
    """Each notice with the Streamlit call its kind names (warning, write, error, success)."""
    for notice in notices:
        getattr(st, notice.kind)(notice.text)


def show_last_answers(view: LastAnswersView, labels: Sequence[str], *, key: str) -> None:
    """Each agent's last answer: a table, the probability bars and any error."""
    st.markdown(view.heading)
    if view.empty:
        st.caption("No agent turn is stored for this case.")
        return
    st.dataframe(view.table, hide_index=True, key=f"{key}_answers")
    st.plotly_chart(agent_probability_figure(labels, view.names, view.probabilities, view.answers),
                    key=f"{key}_probs")
    for line in view.errors:
        st.error(line)
