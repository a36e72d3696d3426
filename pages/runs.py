"""Runs: every run of every kind in the store, each linked to the page that shows it."""
import streamlit as st

from studio.literal import literal
from studio.run_kinds import load_kinds
from studio.views.runs_view import kind_counts, run_detail, runs_table
from studio.widgets import ProjectError, disclaimer, store

st.title("Runs")
disclaimer()
st.write("Every run the store holds, of every kind: D-CEM on the synthetic world, D-CEM over clinical panels, "
         "Small Agent Group runs and training runs. Each row says how many of its units (cells, items, steps) "
         "are stored and how many failed; the page named on the right shows the run in detail.")

db = store()
if db is None:
    st.stop()
kinds = load_kinds()
try:
    table = runs_table(db, kinds)
except ProjectError as exc:
    st.error(f"The runs cannot be read: {literal(exc)}")
    st.stop()
if table.empty:
    st.info("The store holds no run yet. Start one on the Experiments or Agent group page, or import an export "
            "from the sidebar.")
    st.stop()
counts = kind_counts(table)
st.caption(literal("; ".join(f"{k}: {n} run(s)" for k, n in counts.items())))
kind = st.selectbox("Kind", ["all", *counts], key="runs_kind")
shown = table if kind == "all" else table[table["Kind"] == kind]
st.dataframe(shown, hide_index=True, use_container_width=True)
run_id = st.selectbox("Run", shown["Run"].tolist(), key="runs_pick")
if run_id:
    try:
        detail = run_detail(db, kinds, run_id)
    except ProjectError as exc:
        st.error(f"The run cannot be read: {literal(exc)}")
        st.stop()
    st.subheader(literal(f"{detail.run_id} ({detail.kind})"))
    st.write(literal(detail.status_line))
    if detail.page_file:
        st.page_link(detail.page_file, label=f"Open the {detail.page} page")
    if detail.failures:
        st.write("Failed units and why:")
        st.dataframe({"unit": [k for k, _ in detail.failures], "message": [m for _, m in detail.failures]},
                     hide_index=True, use_container_width=True)
    with st.expander("Its settings (spec)"):
        st.code(detail.spec_text, language="json")
    st.caption("`python -m studio runs export RUN --out DIR` writes it as an export; `python -m studio runs "
               "report RUN` prints its report.")
