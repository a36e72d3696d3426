"""Case walkthrough: step through a stored episode round by round.

Deep links: ``?run=...&method=...&case=...&round=...`` opens that view (see studio.walk_nav)."""
import streamlit as st

from studio.views.calibration_chance import run_chance_warnings
from studio.views.walkthrough import describe_run, is_llm_run, mediated_methods, StoreError
from studio.views.walkthrough import case_list
from studio.views.walkthrough_nav import case_table, final_energies
from studio.views.walkthrough_view import (
    confusion_view,
    default_method_index,
    filter_options,
    load_walk_case,
    round_view,
    select_cases,
    truth_text,
    walkthrough_methods,
)
from studio.charts import confusion_figure
from studio.few_shot_examples import show_few_shot_examples
from studio.stepper import chart_layout, side_stepper
from studio.turns import (
    show_agents,
    show_case_text,
    show_mediator_charts,
    show_mediator_round,
    show_notices,
    show_round_reason,
    show_turn_chart,
    show_turn_details,
    show_turns,
)
from studio.walk_nav import (
    case_table_picker,
    open_round,
    pending_link,
    pick_method,
    preset_case,
    preset_run,
    show_link,
)
from studio.widgets import disclaimer, pick_run, store
from studio.literal import literal

st.title("Case walkthrough")
disclaimer()
notes = st.container()  # what a bad deep link fell back to

db = store()
link = pending_link()
if db is not None:
    preset_run(db, link, notes)
run_id = pick_run(db) if db else None
if run_id is None:
    st.stop()

llm = is_llm_run(db, run_id)
if llm:
    st.caption(literal(describe_run(db, run_id)) + " Every round shows what each agent was told and what it answered.")
for line in run_chance_warnings(db, run_id):
    st.warning(literal(line))
methods = walkthrough_methods(db, run_id, llm=llm)
if not methods:
    st.info("This run has no stored outcomes.")
    st.stop()
method = pick_method(methods, default_method_index(methods), link, notes)
mediated = method in mediated_methods()
cases = case_list(db, run_id, method)
options = filter_options(cases)
episode_tab, confusion_tab = st.tabs(["Episode", "Round-wise confusion (ex post)"])

with episode_tab:
    f1, f2, f3 = st.columns(3)
    scenarios = f1.multiselect("Scenario", options["scenario"], key="walk_f_scenario")
    outcomes = f2.multiselect("Outcome", options["outcome"], key="walk_f_outcome",
                              help="The outcome as the case table words it.")
    truths = f3.multiselect("True class", options["truth"], key="walk_f_truth")
    g1, g2 = st.columns(2)
    harmful = g1.checkbox("Harmful consensus only", key="walk_f_harmful")
    escalated = g2.checkbox("Escalated only", key="walk_f_escalated")
    shown = select_cases(cases, scenarios=scenarios, outcomes=outcomes, truths=truths,
                         harmful_only=harmful, escalated_only=escalated)
    st.caption(shown.caption)
    if shown.empty:
        st.stop()
    st.caption("Click a row to open its case; click a column header to sort.")
    case_table_picker(case_table(shown.cases, final_energies(db, run_id, method), mediated=mediated), shown.case_ids)
    preset_case(link, shown.case_ids, notes)
    case_id = st.selectbox("Case", shown.case_ids, key="walk_case")
    link_slot = st.empty()
    try:
        case = load_walk_case(db, run_id, case_id, method, llm=llm)
    except StoreError as exc:
        st.error(literal(exc))
        st.stop()
    if case.llm:
        show_case_text(case.text)
        show_agents(case.agents)

    open_round(link, (case_id, method), case.trace.outcome_round, notes)
    title = st.empty()
    stepper_col, *chart_cols = st.columns(chart_layout(mediated, len(case.trace.labels)))
    with stepper_col:
        t = side_stepper((case_id, method), case.trace.outcome_round)
    view = round_view(case, t, method=method, cases=shown.cases)
    title.subheader(view.title)
    show_link(link_slot, run_id, method, case_id, t)
    with stepper_col:
        show_round_reason(view)
    if view.mediated:
        show_mediator_charts(case.trace, view, chart_cols, key="walk", names=case.names)
        show_mediator_round(case.trace, view, key="walk")
        if view.turns_heading:
            st.markdown(view.turns_heading)
        if view.show_turns:
            show_turns(view.turns, case.trace.labels, key="walk_turns", models=case.models)
    else:
        with chart_cols[0]:
            show_turn_chart(view.turns, case.trace.labels, key="walk_turns")
        show_turn_details(view.turns, case.trace.labels, key="walk_turns", models=case.models)
    show_notices(view.notices)
    if case.llm:
        show_few_shot_examples(db, run_id, case_id, method, t, names=case.names, labels=case.trace.labels,
                               key="walk_examples")
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
