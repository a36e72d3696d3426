"""Overview: what D-CEM Studio is, where to start, and what the store holds."""
import streamlit as st

from studio.views.metric_tables import clinical_views, comparison_view, risk_note
from studio.views.metric_tables import describe_run, runs_overview
from studio.views.overview_view import INTRO, beside_chance_view, run_intro
from studio.widgets import ProjectError
from studio.escalation_cost import escalation_cost_setting
from studio.first_visit import offer_demo, page_link, show_terms, start_steps
from studio.views.glossary import GLOSSARY_GROUPS
from studio.tables import MISSING, runs_table_config, show_metric_table
from studio.widgets import pick_run, store
from studio.literal import literal

st.title("D-CEM Studio")
st.info("Research and teaching tool, not clinical advice. The mediator never gives treatment "
        "advice; STOP_AND_ESCALATE hands the case to a human.")
st.write(INTRO)
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
        metrics, runs = db.metrics(run_id), runs_overview(db)
        intro = run_intro(db, run_id, list(runs["run_id"]))
        st.caption(literal(describe_run(db, run_id)))
        st.markdown(intro.demo)
        st.markdown("**Scenarios** (how the agents of the panel err)\n\n" + intro.scenarios)
        left, right = st.columns(2)
        spread = left.toggle("Show mean ± std over seeds", key="overview_spread")
        cost = escalation_cost_setting("overview_escalation_cost", right)
        st.subheader(literal(intro.heading))
        if intro.kind == "clinical":
            views = clinical_views(metrics.assign(dataset=intro.dataset), spread=spread, escalation_cost=cost)
            for i, (title, frame) in enumerate(views):
                st.markdown(f"**{title}**")
                show_metric_table(frame, key=f"overview_clinical_{i}", spread=spread, escalation_cost=cost)
                if i == 0:
                    st.caption(risk_note(metrics, cost))
        else:
            show_metric_table(comparison_view(metrics, spread=spread, escalation_cost=cost), key="overview_comparison",
                              spread=spread, escalation_cost=cost)
            st.caption(risk_note(metrics, cost))
        beside = beside_chance_view(db, run_id)
        if beside is not None:
            st.markdown("**Accuracy beside chance, the most frequent class and each class's recall**")
            st.dataframe(beside.table, hide_index=True, key="overview_beside", placeholder=MISSING)
            st.caption(beside.caption)
            st.dataframe(beside.recall, hide_index=True, key="overview_recall", placeholder=MISSING)
        st.subheader("Stored runs")
        st.dataframe(runs, hide_index=True, key="overview_runs", column_config=runs_table_config(),
                     placeholder=MISSING)
    except ProjectError as exc:
        st.error(f"The run cannot be summarised: {literal(exc)}")
