"""Agent group: a stored Small Agent Group debate, round by round and role by role."""
import streamlit as st

from studio.sag_session import (
    BENCHMARKS,
    PRESETS,
    changed_items,
    time_estimate,
    DISCLAIMER,
    NO_RUN_HINT,
    item_labels,
    load_item_view,
    run_labels,
    turn_markdown,
)
from studio.widgets import ProjectError
from studio.sag_charts import distribution_figure, mediator_figure
from studio.sag_compare import capability_note, ordered_runs, show_comparison
from studio.sag_eval_session import announce_import, shipped_debates_offer
from studio.sag_launch_panel import adapter_pick, checked_spec, launch_button, launch_fields
from studio.sag_session import sag_store
from studio.tables import MISSING
from studio.widgets import titled_table
from studio.literal import literal
from studio.views import session_keys as keys

st.title("Agent group")
st.caption(DISCLAIMER)
st.write("Small language-model agents in four roles (reasoning, knowledge retrieval, safety audit, "
         "synthesis and judge) debate a multiple-choice question in rounds. Pick a stored run and an item "
         "to see who said what in each round.")

db = sag_store()
if db is None:
    st.stop()

with st.expander("Launch a small run", expanded=False):
    c1, c2 = st.columns(2)
    benchmark = c1.selectbox("Benchmark", BENCHMARKS, key="ag_bench")
    group = c2.selectbox("Group", PRESETS, index=PRESETS.index("sag-6"), key="ag_group")
    fields = launch_fields(st.columns(3))
    spec = checked_spec(benchmark, group, fields, adapter_pick())
    st.caption("Loads the group's models in this process and answers the items one by one; answered items are "
               "saved as they finish, and launching the same settings again resumes. The bar counts the agents' "
               "turns as they are played. Run stays disabled while a field above is invalid.")
    if spec is not None:
        st.caption(time_estimate(db.outcomes(), spec.cfg.name, spec.n_items))
    launch_button(db, spec)

announce_import()
all_runs = db.runs()
runs = run_labels(all_runs)
if not runs:
    st.info(NO_RUN_HINT)
    shipped_debates_offer(db, key="ag_shipped")
    st.stop()
capability_note()
order = ordered_runs(all_runs, runs)
if st.session_state.get(keys.AG_RUN) not in runs:
    st.session_state.pop(keys.AG_RUN, None)
run_id = st.selectbox("Run", order, format_func=runs.get, key="ag_run",
                      help="Runs you launched or imported come first, then the evaluation's accuracy runs.")
items = item_labels(db.outcomes(run_id))
changed = changed_items(db.agent_answers(run_id))
if st.checkbox(f"Only items where a member changed its answer ({len(changed)} of {len(items)})", key="ag_changed",
               disabled=not changed, help="A reasoning agent whose answer in a round differs from its answer in "
                                          "the round before."):
    items = {i: label for i, label in items.items() if i in changed}
item_id = st.selectbox("Item", list(items), format_func=items.get, key=f"ag_item_{run_id}")
try:
    view = load_item_view(db, run_id, item_id)
except ProjectError as exc:
    st.error(f"This item cannot be shown: {literal(exc)}")
    st.stop()

with st.expander("Question and options (the whole case)" if view.readings else
                 "Question and options (what the agents read)", expanded=False):
    st.markdown(view.question_markdown)
if view.readings:
    with st.expander("What each member read (no member reads the whole case; the judge and the safety agent "
                     "read none of it)", expanded=True):
        for agent, reads, text in view.readings:
            st.markdown(f"**{agent}** read {reads}: {literal(text)}")
getattr(st, view.outcome.kind)(view.outcome.line)
if view.readings:
    st.subheader("How the debate turned")
    for line in view.turning or ("No member changed its answer on this item.",):
        st.markdown(f"- {literal(line)}")

st.subheader("Debate timeline")
st.caption("One lane per role, one column per round. Round 0: knowledge agents search and reasoning agents "
           "answer alone; later rounds: reasoning and knowledge agents debate, then safety agents audit and "
           "judges adjudicate. p is each turn's largest option probability.")
for lane in view.timeline.lanes:
    with st.container(border=True):
        st.markdown(f"**{lane.title}**")
        if lane.empty:
            st.caption("No agent of this role plays in this group.")
            continue
        for col, rnd, cell in zip(st.columns(len(view.timeline.rounds)), view.timeline.rounds, lane.cells):
            col.caption(f"Round {rnd}")
            for turn in cell:
                col.markdown(turn_markdown(turn))

if view.dcem:
    left, right = st.columns(2)
    left.plotly_chart(distribution_figure(view.distributions, view.letters), key="ag_dist")
    right.plotly_chart(mediator_figure(view.mediator), key="ag_mediator")
    st.dataframe(view.mediator, placeholder=MISSING, hide_index=True, key="ag_mediator_table")
else:
    st.plotly_chart(distribution_figure(view.distributions, view.letters), key="ag_dist")

titled_table("Retrieved passages", view.passages, empty="No passage was retrieved for this item.",
             key="ag_passages", wide="text")
titled_table("Safety flags", view.flags, empty="No safety flag was raised.", key="ag_flags")
titled_table("Judges' reasoning", view.judges, empty="No judge plays in this group.", key="ag_judges",
             wide="rationale")

show_comparison(db, all_runs, order, runs, run_id)
