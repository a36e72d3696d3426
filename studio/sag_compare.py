"""The Agent group page's run choice and run comparison: the run list in its most useful
order (:mod:`studio.views.sag_run_choice`), a comparison that opens on a pair sharing its items, and
each run's accuracy beside chance, the best single letter and its most frequent answer."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from common.errors import ProjectError
from sag.runs.capability import capability_text, packaged_capability
from sag.runs.compare import compare_runs
from studio.views.sag_run_choice import partner_run, useful_order
from sag.store.tables import SagStore
from sag.runs.versus import run_rows, versus_frame
from studio.tables import MISSING
from studio.views import session_keys as keys

__all__ = ["ordered_runs", "capability_note", "show_comparison"]


def ordered_runs(runs: pd.DataFrame, labels: dict[str, str]) -> list[str]:
    """The labelled runs, most useful first."""
    return [r for r in useful_order(runs) if r in labels]


@st.cache_data(show_spinner=False)
def _capability() -> str:
    return capability_text(packaged_capability())


def capability_note() -> None:
    """Once, plainly: what the packaged models can do, measured on the shipped benchmarks."""
    st.info(_capability())


def show_comparison(db: SagStore, runs: pd.DataFrame, order: list[str], labels: dict[str, str], run_id: str) -> None:
    """Two run pickers (A opens on the page's run, B on a run sharing its items) and, on
    their common items, each run's accuracy beside chance with the per-item table."""
    st.subheader("Compare two runs")
    if st.session_state.get(keys.AG_CMP_A) not in order:
        st.session_state[keys.AG_CMP_A] = run_id
    a, b = st.columns(2)
    run_a = a.selectbox("Run A", order, format_func=labels.get, key="ag_cmp_a")
    outcomes_a = db.outcomes(run_a)
    if st.session_state.get(keys.AG_CMP_FOR) != run_a or st.session_state.get(keys.AG_CMP_B) not in order:
        answered = set(outcomes_a["item_id"])
        st.session_state[keys.AG_CMP_B] = partner_run(runs[runs["run_id"].isin(order)], run_a,
                                                   shared=lambda other: len(answered & set(db.outcomes(other)["item_id"])))
        st.session_state[keys.AG_CMP_FOR] = run_a
    run_b = b.selectbox("Run B", order, format_func=labels.get, key="ag_cmp_b")
    outcomes = {run_a: outcomes_a, run_b: db.outcomes(run_b)}
    comparison = compare_runs(outcomes[run_a], outcomes[run_b])
    st.write(comparison.caption)
    if not comparison.n_common or run_a == run_b:
        return
    groups = runs.set_index("run_id")["group_name"].astype(str).to_dict()
    try:
        rows = run_rows({run_a: f"A: {groups[run_a]}", run_b: f"B: {groups[run_b]}"}, outcomes, db.items(run_a), run_a)
    except ProjectError as exc:
        st.caption(f"No accuracy beside chance for this pair: {exc}")
    else:
        st.dataframe(versus_frame(rows), placeholder=MISSING, hide_index=True, key="ag_cmp_versus")
        st.caption("Chance: one option picked at random. Best single letter: the most that answering one letter "
                   "on every item scores. An accuracy near either is not knowledge.")
    st.dataframe(comparison.table, placeholder=MISSING, hide_index=True, key="ag_cmp_table")
