"""Case walkthrough: step through a stored episode round by round."""
import streamlit as st

from dcem.analysis.run_info import describe_run, is_llm_run
from dcem.analysis.walkthrough import case_list
from dcem.analysis.walkthrough_view import (
    confusion_view,
    default_method_index,
    filter_options,
    load_walk_case,
    round_view,
    select_cases,
    truth_text,
    walkthrough_methods,
)
from dcem.core.vocabulary import method_label
from dcem.store.database import StoreError
from studio.charts import confusion_figure
from studio.turns import (
    show_agents,
    show_case_text,
    show_mediator_round,
    show_notices,
    show_turns,
)
from studio.widgets import disclaimer, pick_run, round_stepper, store

st.title("Case walkthrough")
disclaimer()

db = store()
run_id = pick_run(db) if db else None
if run_id is None:
    st.stop()

llm = is_llm_run(db, run_id)
if llm:
    st.caption(describe_run(db, run_id) + " Every round shows what each agent was told and what it answered.")
methods = walkthrough_methods(db, run_id, llm=llm)
if not methods:
    st.info("This run has no stored outcomes.")
    st.stop()
method = st.radio("Method", methods, horizontal=True, index=default_method_index(methods), format_func=method_label)
cases = case_list(db, run_id, method)
options = filter_options(cases)
episode_tab, confusion_tab = st.tabs(["Episode", "Round-wise confusion (ex post)"])

with episode_tab:
    f1, f2, f3 = st.columns(3)
    scenarios = f1.multiselect("Scenario", options["scenario"])
    actions = f2.multiselect("Outcome", options["action"])
    truths = f3.multiselect("True class", options["truth"])
    g1, g2 = st.columns(2)
    harmful = g1.checkbox("Harmful consensus only")
    escalated = g2.checkbox("Escalated only")
    shown = select_cases(cases, scenarios=scenarios, actions=actions, truths=truths,
                         harmful_only=harmful, escalated_only=escalated)
    st.caption(shown.caption)
    if shown.empty:
        st.stop()
    case_id = st.selectbox("Case", shown.case_ids, key="walk_case")
    try:
        case = load_walk_case(db, run_id, case_id, method, llm=llm)
    except StoreError as exc:
        st.error(str(exc))
        st.stop()
    if case.llm:
        show_case_text(case.text)
        show_agents(case.agents)

    t = round_stepper((case_id, method), case.trace.outcome_round, key="walk_round", seen_key="walk_case_seen")
    view = round_view(case, t, method=method, cases=shown.cases)
    st.subheader(view.title)
    if view.mediated:
        show_mediator_round(case.trace, view, key="walk")
    if view.turns_heading:
        st.markdown(view.turns_heading)
    if view.show_turns:
        show_turns(view.turns, case.trace.labels, key="walk_turns", models=case.models)
    show_notices(view.notices)
    if st.toggle("Reveal the ground truth (teaching mode)", key="walk_reveal"):
        st.info(truth_text(case.trace))

with confusion_tab:
    scenario = st.selectbox("Scenario", options["scenario"], key="conf_scenario")
    confusion = confusion_view(db, run_id, cases, scenario, method)
    r = st.slider("Round", 1, confusion.n_rounds, 1, key="conf_round") if confusion.n_rounds > 1 else 1
    st.caption("Counts over the evaluation cases, computed after the fact for display; the "
               "mediator uses only the fixed calibration matrices.")
    for col, panel in zip(st.columns(confusion.n_agents), confusion.panels(r, case.names)):
        col.plotly_chart(confusion_figure(panel.share, confusion.labels, panel.title, counts=panel.counts),
                         key=f"conf_{panel.agent}")
