"""Experiments: launch synthetic and clinical runs (on your own case file too), compare methods and runs,
download results."""
import streamlit as st

from studio.views.launch_form import SCENARIOS, COMPLIANCE, COMPLIANCE_NAMES, WORLD_NAMES, WORLDS
from studio.views.metric_tables import term_help
from studio.views.run_compare import run_labels, COMPARISON_METRICS, comparison_table, metric_namer
from studio.views.launch_form import SEEDS_RANGE, T_MAX_RANGE, read_launch_form
from studio.views.run_compare import (changed_outcomes, export_tables, metric_deltas, round_curves,
                              settings_diff, to_csv_bytes, to_parquet_bytes)
from studio.experiment_charts import comparison_figure, round_curve_figure
from studio.executor_choice import executor_choice
from studio.experiment_launch import (launch_spec, queue_launch, run_pending, settle_launch, show_cell_count,
                                      show_last_launch, threshold_choice)
from studio.experiment_tables import changed_view, deltas_view
from studio.clinical_launch_panel import clinical_launch_section
from studio.escalation_cost import escalation_cost_setting
from studio.tables import MISSING
from studio.widgets import disclaimer, pick_run, store

st.title("Experiments")
disclaimer()
settle_launch()  # a control pressed during a launch: wait until its cell is stored
db = store()
if db is None:
    st.stop()

with st.expander("Launch a synthetic experiment", expanded=False):
    c1, c2 = st.columns(2)
    scenarios = c1.multiselect("Scenarios", SCENARIOS, default=list(SCENARIOS), key="exp_scen")
    seeds_text = c2.text_input(f"Seeds ({SEEDS_RANGE[0]} to {SEEDS_RANGE[1]})", "3", key="exp_seeds",
                               help="How many seeds per scenario: seeds 0, 1, ... are run.")
    c3, c4, c5 = st.columns(3)
    xi = c3.slider("Compliance xi", 0.0, 1.0, 1.0, 0.05, key="exp_xi")
    t_text = c4.text_input(f"Round budget T ({T_MAX_RANGE[0]} to {T_MAX_RANGE[1]})", "12", key="exp_t",
                           help=term_help("t_max"))
    ablation = c5.checkbox("Compliance ablation", value=False, key="exp_abl")
    form = read_launch_form(scenarios, seeds_text, t_text)
    for column, problem in ((c1, form.scenario_error), (c2, form.seeds.error), (c4, form.t_max.error)):
        if problem:
            column.error(problem)
    c6, c7 = st.columns(2)
    world = c6.radio("Agents", list(WORLDS), format_func=WORLD_NAMES.get, horizontal=True, key="exp_world",
                     help="The specification's agents sample from p ∝ exp(s); the sharpened variant from "
                          "p ∝ exp(3 s), closer to the agent accuracies of the paper's Table 5.")
    compliance = c7.radio("Compliance model", list(COMPLIANCE), format_func=COMPLIANCE_NAMES.get,
                          horizontal=True, key="exp_comp")
    fit_ok, risk_target = threshold_choice()
    spec = launch_spec(form, xi=xi, ablation=ablation, world=world, compliance=compliance,
                       risk_target=risk_target) if fit_ok else None
    show_cell_count(db, form, spec, ablation)
    st.caption("Finished cells are saved as they complete. Pressing Stop (or any other control) "
               "interrupts between cells; launching the same settings again resumes.")
    where = executor_choice("exp_executor")
    run_pressed = st.button("Run", type="primary", key="exp_run", disabled=spec is None)
    launch_slot = st.container()
    if run_pressed and spec is not None:
        queue_launch(spec, where)
with st.expander("Launch a clinical experiment (DDXPlus-8, MedQA-Tri or your own case file)", expanded=False):
    st.caption("A panel of local models or statistical members on clinical cases, CAL/TEST per seed, with D-CEM "
               "and the baselines. Research and teaching only: no result is a diagnosis or treatment advice, and "
               "an escalated case goes to a human.")
    clinical_launch_section(db)
show_last_launch()

run_id = pick_run(db, key="exp_view_run")
if run_id is None:
    run_pending(db, launch_slot)
    st.stop()
m1, m2 = st.columns(2)
cost = escalation_cost_setting("exp_escalation_cost", m2)
table = comparison_table(db.metrics(run_id), escalation_cost=cost)
metric = m1.selectbox("Metric", COMPARISON_METRICS, key="exp_metric", format_func=metric_namer(cost))
st.plotly_chart(comparison_figure(table, metric, cost), key="exp_fig3")
curves = round_curves(db, run_id)
if not curves.empty:
    a, b = st.columns(2)
    a.plotly_chart(round_curve_figure(curves, "accuracy", "D-CEM pooled accuracy per round"), key="exp_acc")
    b.plotly_chart(round_curve_figure(curves, "energy", "D-CEM energy per round"), key="exp_energy")

st.subheader("Download")
tables = export_tables(db, run_id)
name = st.radio("Table", list(tables), horizontal=True, key="exp_table")
d1, d2 = st.columns(2)
d1.download_button("CSV", to_csv_bytes(tables[name]), file_name=f"{run_id}-{name}.csv", mime="text/csv")
d2.download_button("Parquet", to_parquet_bytes(tables[name]), file_name=f"{run_id}-{name}.parquet",
                   mime="application/octet-stream")

st.subheader("Compare two runs")
others = [r for r in db.runs()["run_id"] if db.done_cells(r)]
labels = run_labels(db)
other = st.selectbox("Other run", others, key="exp_other", format_func=lambda r: labels.get(r, r))
if other == run_id:
    st.caption("Pick a different run to compare.")
else:
    st.write("Settings that differ")
    st.dataframe(settings_diff(db, run_id, other), placeholder=MISSING, hide_index=True)
    st.write("Metric means and differences (other minus selected)")
    st.dataframe(deltas_view(metric_deltas(db, run_id, other, escalation_cost=cost), run_id, other, cost),
                 placeholder=MISSING, hide_index=True)
    changed = changed_outcomes(db, run_id, other)
    st.write(f"{len(changed)} cases changed outcome under D-CEM")
    st.dataframe(changed_view(changed, run_id, other), placeholder=MISSING, hide_index=True)

run_pending(db, launch_slot)  # last: every section above stays on screen while it runs
