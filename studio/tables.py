"""Tables in Streamlit's table widget: metric names in words with a tooltip each, shares
in percent, the runs list with readable headers.

:func:`metric_table` returns the frame and the ``column_config`` for ``st.dataframe``;
:func:`show_metric_table` shows it.  The reshaping itself is pure
(:mod:`studio.views.metric_tables`); the words and tooltips come from
:mod:`studio.views.glossary`.
"""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd
import streamlit as st

from studio.views.glossary import metric_words, term_help
from studio.views.metric_tables import is_percent, metric_columns

__all__ = ["KEY_COLUMNS", "MISSING", "metric_table", "show_metric_table", "runs_table_config", "review_queue_config"]

MISSING = "—"  # what a table shows for a value that does not apply (a baseline's action mix, ...)

KEY_COLUMNS: dict[str, tuple[str, str]] = {
    "scenario": ("Scenario", "The scenario (S1, S2, S3a, S3b): how the agents of the panel err."),
    "method": ("Method", "How the panel reached its decision: a single agent, free discussion, a fixed pool, "
                         "or the D-CEM mediator (with or without escalation)."),
    "dataset": ("Dataset", "The case set of a clinical run."),
}


def _metric_column(name: str, spread: bool, escalation_cost: float | None = None) -> Any:
    words, tip = metric_words(name, escalation_cost=escalation_cost), term_help(name)
    if spread:
        return st.column_config.TextColumn(words, help=tip)
    fmt = "%.1f %%" if is_percent(name) else "%.3f"
    return st.column_config.NumberColumn(words, help=tip, format=fmt)


def metric_table(frame: pd.DataFrame, rows: Sequence[str] = ("scenario", "method"), *,
                 spread: bool = False, escalation_cost: float | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The frame of :func:`studio.views.metric_tables.wide_metrics` and its column
    configuration: key columns titled, each metric titled in words with its glossary
    tooltip, shares as "12.5 %" (``spread``: the cells are already text); the risk with
    escalation titled with ``escalation_cost``, the cost its values were computed at
    (None: the default 0.5)."""
    config: dict[str, Any] = {}
    for key in rows:
        title, tip = KEY_COLUMNS.get(key, (key, ""))
        config[key] = st.column_config.TextColumn(title, help=tip or None)
    for name in metric_columns(frame, rows):
        config[name] = _metric_column(str(name), spread, escalation_cost)
    return frame, config


def show_metric_table(frame: pd.DataFrame, *, key: str, rows: Sequence[str] = ("scenario", "method"),
                      spread: bool = False, empty: str = "No metrics stored for this run.",
                      escalation_cost: float | None = None) -> None:
    """``st.dataframe`` of :func:`metric_table` (or the ``empty`` caption)."""
    if frame.empty:
        st.caption(empty)
        return
    shown, config = metric_table(frame, rows, spread=spread, escalation_cost=escalation_cost)
    st.dataframe(shown, hide_index=True, key=key, column_config=config, placeholder=MISSING)


def runs_table_config() -> dict[str, Any]:
    """Column titles for :func:`dcem.analysis.run_info.runs_overview`."""
    text = st.column_config.TextColumn
    return {"run_id": text("Run"), "kind": text("Kind", help="synthetic: rule-guided agents; clinical: "
                                                           "language-model agents"),
            "status": text("Status"), "dataset": text("Dataset"), "scenarios": text("Scenarios"),
            "seeds": text("Seeds"), "agents": text("Agents"),
            "created_at": st.column_config.DatetimeColumn("Started", format="YYYY-MM-DD HH:mm"),
            "finished_at": st.column_config.DatetimeColumn("Finished", format="YYYY-MM-DD HH:mm")}


_QUEUE_TITLES = {  # column -> (title, a glossary term or the tooltip itself)
    "case_id": ("Case", None), "scenario": ("Scenario", KEY_COLUMNS["scenario"][1]), "seed": ("Seed", None),
    "energy": ("Final energy", "energy"), "margin": ("Margin", "margin"), "descent": ("Descent", "descent"),
    "steers": ("Challenges", "How many times the mediator challenged an agent in this case."),
    "rounds": ("Rounds", "The round in which the mediator escalated."),
    "reviewed": ("Reviewed", "Whether a person has recorded a review of this case."),
    "review_label": ("Latest review", "The final label of the newest review of this case."),
    "why": ("Why escalated", None), "truth_label": ("True class", "The dataset's label (evaluation only)."),
}


def review_queue_config() -> dict[str, Any]:
    """Column titles (and tooltips, from the glossary where it has the term) for the
    escalation review queue (:func:`studio.views.review_view.queue_view`)."""
    config: dict[str, Any] = {}
    for name, (title, tip) in _QUEUE_TITLES.items():
        config[name] = st.column_config.Column(title, help=(term_help(tip) or tip) if tip else None)
    return config
