"""Overview: what D-CEM Studio is and what the store holds."""
import streamlit as st

from dcem.report import comparison_table, format_table
from studio.widgets import pick_run, store

st.title("D-CEM Studio")
st.info("Research and teaching tool, not clinical advice. The mediator never gives treatment "
        "advice; STOP_AND_ESCALATE hands the case to a human.")
st.write("D-CEM mediates a panel of diagnostic agents: it continues, challenges one agent on a "
         "dangerous alternative, certifies a low-risk decision, or escalates. Run an experiment "
         "from a terminal with `python -m dcem run synthetic`, then step through its cases on the "
         "Case walkthrough page.")

db = store()
run_id = pick_run(db, key="overview_run") if db else None
if run_id is not None:
    st.subheader(f"Run {run_id}: mean ± std over seeds")
    st.text(format_table(comparison_table(db.metrics(run_id)), index=["scenario", "metric"], columns="method"))
    st.dataframe(db.runs()[["run_id", "kind", "status", "created_at", "finished_at"]], hide_index=True)
