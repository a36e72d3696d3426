"""Overview: what D-CEM Studio is and what the store holds."""
import streamlit as st

from dcem.analysis.clinical_report import clinical_text
from dcem.errors import DcemError
from dcem.analysis.report import comparison_table, format_table
from dcem.analysis.run_info import describe_run, run_kind, run_spec, runs_overview
from studio.widgets import pick_run, store

st.title("D-CEM Studio")
st.info("Research and teaching tool, not clinical advice. The mediator never gives treatment "
        "advice; STOP_AND_ESCALATE hands the case to a human.")
st.write("D-CEM mediates a panel of diagnostic agents: it continues, challenges one agent on a "
         "dangerous alternative, certifies a low-risk decision, or escalates. Run an experiment "
         "from a terminal with `python -m dcem run synthetic` (or a clinical run of language-model "
         "agents with `python -m dcem_clinical run`), then step through its cases on the "
         "Case walkthrough page.")

db = store()
run_id = pick_run(db, key="overview_run") if db else None
if run_id is not None:
    try:
        metrics = db.metrics(run_id)
        clinical = run_kind(db, run_id) == "clinical"
        st.caption(describe_run(db, run_id))
        if clinical:
            st.subheader(f"Run {run_id}: clinical tables, mean ± std over seeds")
            st.text(clinical_text(metrics.assign(dataset=run_spec(db, run_id).get("dataset", "?"))))
        else:
            st.subheader(f"Run {run_id}: mean ± std over seeds")
            st.text(format_table(comparison_table(metrics), index=["scenario", "metric"], columns="method"))
        st.dataframe(runs_overview(db), hide_index=True, key="overview_runs")
    except DcemError as exc:
        st.error(f"The run cannot be summarised: {exc}")
