"""Overview: what D-CEM Studio is, where to start, and what the store holds."""
import streamlit as st

from studio.views.metric_tables import clinical_views, comparison_view, risk_note
from studio.views.metric_tables import describe_run, run_kind, run_spec, runs_overview
from studio.widgets import ProjectError
from studio.first_visit import GLOSSARY_GROUPS, offer_demo, page_link, show_terms, start_steps
from studio.tables import MISSING, runs_table_config, show_metric_table
from studio.widgets import pick_run, store
from studio.literal import literal

st.title("D-CEM Studio")
st.info("Research and teaching tool, not clinical advice. The mediator never gives treatment "
        "advice; STOP_AND_ESCALATE hands the case to a human.")
st.write("D-CEM mediates a panel of diagnostic agents: it continues, challenges one agent on a "
         "dangerous alternative, certifies a low-risk decision, or escalates. Run an experiment "
         "from a terminal with `python -m dcem run synthetic` (or a clinical run of language-model "
         "agents with `python -m dcem_clinical run`), then step through its cases on the "
         "Case walkthrough page.")
start_steps()
with st.expander("Glossary: what the metrics and parameters mean"):
    page_link("pages/glossary.py", "Open the full glossary")
    for group, terms in GLOSSARY_GROUPS[:2]:
        st.markdown(f"**{group}**")
        show_terms(terms)

db = store()
run_id = pick_run(db, key="overview_run") if db is not None and offer_demo(db) else None
if run_id is not None:
    try:
        metrics = db.metrics(run_id)
        st.caption(literal(describe_run(db, run_id)))
        spread = st.toggle("Show mean ± std over seeds", key="overview_spread")
        if run_kind(db, run_id) == "clinical":
            st.subheader(f"Run {literal(run_id)}: clinical tables, mean over seeds")
            dataset = run_spec(db, run_id).get("dataset", "?")
            for i, (title, frame) in enumerate(clinical_views(metrics.assign(dataset=dataset), spread=spread)):
                st.markdown(f"**{title}**")
                show_metric_table(frame, key=f"overview_clinical_{i}", spread=spread)
                if "system_risk" in frame.columns:
                    st.caption(risk_note(metrics))
        else:
            st.subheader(f"Run {literal(run_id)}: method comparison, mean over seeds")
            show_metric_table(comparison_view(metrics, spread=spread), key="overview_comparison", spread=spread)
            st.caption(risk_note(metrics))
        st.subheader("Stored runs")
        st.dataframe(runs_overview(db), hide_index=True, key="overview_runs", column_config=runs_table_config(),
                     placeholder=MISSING)
    except ProjectError as exc:
        st.error(f"The run cannot be summarised: {literal(exc)}")
