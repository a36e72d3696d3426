"""Streamlit views of a language-model run's case: the case text, the agents, their turns."""
from __future__ import annotations

from typing import Sequence

import pandas as pd
import streamlit as st

from dcem.analysis.walkthrough import probability_table
from studio.charts import agent_probability_figure

__all__ = ["show_case_text", "show_agents", "show_turns"]



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
