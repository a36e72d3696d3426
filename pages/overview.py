"""Overview: what D-CEM Studio is and what the store holds."""
import streamlit as st

from dcem.report import comparison_table, format_table
from dcem.store import Store, StoreError, default_db_path

st.title("D-CEM Studio")
st.info("Research and teaching tool, not clinical advice. The mediator never gives treatment "
        "advice; STOP_AND_ESCALATE hands the case to a human.")
st.write("D-CEM mediates a panel of diagnostic agents: it continues, challenges one agent on a "
         "dangerous alternative, certifies a low-risk decision, or escalates. Run an experiment "
         "from a terminal with `python -m dcem run synthetic`; the full dashboard pages build on "
         "the runs stored here.")

path = default_db_path()
if not path.exists():
    st.write(f"No results stored yet in `{path.name}`.")
else:
    try:
        with Store(path, read_only=True) as store:
            runs = store.runs()
            run_id = store.latest_run() if not runs.empty else None
            metrics = store.metrics(run_id) if run_id else None
    except StoreError as exc:
        st.warning(f"The result store cannot be read right now: {exc}")
    else:
        st.subheader("Stored runs")
        st.dataframe(runs[["run_id", "kind", "status", "created_at", "finished_at"]], hide_index=True)
        if metrics is not None and not metrics.empty:
            st.subheader(f"Latest run {run_id}: mean ± std over seeds")
            st.text(format_table(comparison_table(metrics), index=["scenario", "metric"], columns="method"))
