"""Streamlit views of a case: the case text, the agents, their turns, a mediated round's
charts and metrics, the notices under a round, and the agents' last answers."""
from __future__ import annotations

import html

from typing import Mapping, Sequence

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from studio.views.review_view import LastAnswersView
from studio.views.walkthrough import CaseTrace, probability_table
from studio.views.walkthrough_view import Notice, RoundView
from studio.charts import agent_probability_figure, belief_figure, energy_figure
from studio.tables import MISSING
from studio.literal import literal, literal_lines

__all__ = ["label_breaks", "show_case_text", "show_agents", "show_turns", "show_turn_chart", "show_turn_details",
           "show_round_reason", "show_mediator_charts", "show_mediator_round", "show_notices", "show_last_answers"]

LABEL_METRICS = ("Bayes decision", "Runner-up")  # round metrics whose value is a class name


def show_case_text(text: str | None, *, expanded: bool = True) -> None:
    """The case text the agents read, in an expander (open by default)."""
    with st.expander("Case text (what the agents read)", expanded=expanded):
        if text is None:
            st.caption("No case text is stored for this case.")
        else:
            st.markdown(literal_lines(text))


def label_breaks(label: object) -> str:
    """A class name as HTML that may wrap after each underscore ("Pulmonary_" then
    "embolism"), never inside a word while a word break fits."""
    return html.escape(str(label)).replace("_", "_<wbr>")


def show_agents(agents: pd.DataFrame) -> None:
    """The agents' names, models, the part of the case each read (when the members read
    different parts: two members of one model then differ by it), role sentences and
    calibration accuracy."""
    if agents.empty:
        return
    columns = ["name", "model", *(["view"] if "view" in agents and agents["view"].notna().any() else []), "role",
               "calibration_accuracy"]
    table = agents[columns].rename(columns={"name": "agent", "calibration_accuracy": "CAL accuracy"})
    if "view" in table:
        table["view"] = ["@" + str(v) if isinstance(v, str) and v else "whole case" for v in table["view"]]
    st.dataframe(table, placeholder=MISSING, hide_index=True,
                 column_config={"role": st.column_config.TextColumn("role", width="large"),
                                "view": st.column_config.TextColumn(
                                    "reads", help="The part of the case this member read (its view).")})


def show_turns(turns: pd.DataFrame, labels: Sequence[str], *, key: str, title: str = "",
               models: dict[int, str] | None = None) -> None:
    """One round's agent turns: their probability vectors (bars and a table) and, per
    agent, the mediator note it received, its answer, its raw reply and any error."""
    show_turn_chart(turns, labels, key=key, title=title)
    show_turn_details(turns, labels, key=key, models=models)


def show_turn_chart(turns: pd.DataFrame, labels: Sequence[str], *, key: str, title: str = "") -> None:
    """The agents' probability vectors of one round as bars (a caption when none is stored)."""
    if turns.empty:
        st.caption("No agent turn is stored for this round.")
        return
    st.plotly_chart(agent_probability_figure(labels, turns["agent_name"].tolist(), turns["probabilities"].tolist(),
                                             turns["label"].tolist(), title), key=f"{key}_probs")


def show_turn_details(turns: pd.DataFrame, labels: Sequence[str], *, key: str,
                      models: dict[int, str] | None = None) -> None:
    """The probability table and, per agent, its answer, the note it received, its raw
    reply and any error."""
    if turns.empty:
        return
    with st.expander("Probability table", expanded=False):
        st.dataframe(probability_table(turns, labels).round(3), placeholder=MISSING, key=f"{key}_table")
    cols = st.columns(len(turns))
    for col, turn in zip(cols, turns.itertuples(index=False)):
        model = (models or {}).get(int(turn.agent))
        who = f"**{literal(turn.agent_name)}**" + (f" ({literal(model)})" if model else "")
        if turn.label is None:
            col.markdown(f"{who}: :red[**no usable answer**]")
        else:
            p = turn.probabilities[list(labels).index(turn.label)] if turn.probabilities is not None else None
            col.markdown(f"{who} answered **{literal(turn.label)}**" + (f" (p = {p:.3f})" if p is not None else ""))
        if turn.error:
            col.error(literal(f"⚠ {turn.agent_name}: {turn.error}"))
        if turn.note:
            col.caption("Mediator note received before answering:")
            col.info(literal(turn.note))
        else:
            col.caption("No mediator note: the agent read the case only.")
        with col.expander("Raw reply", expanded=False):
            st.code(turn.reply if turn.reply else "(no reply)", language=None, wrap_lines=True)
        if turn.cached:
            col.caption("Answered from the call log (no new model call).")


def show_round_reason(view: RoundView) -> None:
    """Why the mediator took the round's action, in words with the numbers."""
    if view.reason:
        st.markdown(f"**Why {view.row['action']}:** {view.reason}")


def show_mediator_charts(trace: CaseTrace, view: RoundView, charts: Sequence[DeltaGenerator], *, key: str,
                         names: Mapping[int, str] | None = None) -> None:
    """The energy chart (thresholds as labelled lines) and the belief chart, one per column
    (with one column, the belief chart goes full width below)."""
    cfg, row = trace.config, view.row
    charts[0].plotly_chart(energy_figure(trace.rounds, view.number, eps_safe=cfg.eps_safe, eps_low=cfg.eps_low),
                           key=f"{key}_energy")
    agent_names = [(names or {}).get(a, f"agent {a + 1}") for a in range(len(row["posteriors"]))]
    belief = belief_figure(trace.labels, row["posteriors"], row["pooled"], row["reports"], row["dangerous_miss"],
                           int(row["decision"]), names=agent_names)
    (charts[1] if len(charts) > 1 else st).plotly_chart(belief, key=f"{key}_belief")


def show_mediator_round(trace: CaseTrace, view: RoundView, *, key: str) -> None:
    """A mediated round's four metrics, then the decision beside the loss matrix and
    high-risk classes, and one line per agent."""
    for col, (name, value) in zip(st.columns(len(view.metrics)), view.metrics):
        if name in LABEL_METRICS:  # a class name wraps, at its underscores, instead of being cut
            col.markdown(f"<div class='round-label'><small>{html.escape(name)}</small><br>"
                         f"<span style='font-size:1.6rem;overflow-wrap:break-word'>{label_breaks(value)}</span>"
                         "</div>", unsafe_allow_html=True)
        else:
            col.metric(name, value)
    left, right = st.columns(2)
    with left:
        for line in view.agent_lines:
            st.markdown(line)
    if view.decision is not None:
        right.markdown("**The decision and the loss** (⚠ high-risk class)")
        right.dataframe(view.decision, hide_index=True, key=f"{key}_decision")
        right.caption("Expected loss: the sum over true classes y of L[class, y] × Q(y); the decision is the "
                      "class with the lowest. Cost if true: what the decision costs if that class is the truth, "
                      "L[decision, class].")


def show_notices(notices: Sequence[Notice]) -> None:
    """Each notice with the Streamlit call its kind names (warning, write, error, success)."""
    for notice in notices:
        getattr(st, notice.kind)(literal(notice.text))


def show_last_answers(view: LastAnswersView, labels: Sequence[str], *, key: str) -> None:
    """Each agent's last answer: a table, the probability bars and any error."""
    st.markdown(view.heading)
    if view.empty:
        st.caption("No agent turn is stored for this case.")
        return
    text = st.column_config.TextColumn
    st.dataframe(view.table, placeholder=MISSING, hide_index=True, key=f"{key}_answers", column_config={
        "agent_name": text("Agent"), "model": text("Model"), "label": text("Answer"),
        "probability": st.column_config.NumberColumn("Its probability", format="%.3f"),
        "runner_up": text("Runner-up label"),
        "runner_up_probability": st.column_config.NumberColumn("Runner-up probability", format="%.3f"),
        "error": text("Error")})
    st.plotly_chart(agent_probability_figure(labels, view.names, view.probabilities, view.answers),
                    key=f"{key}_probs")
    for line in view.errors:
        st.error(literal(line))
