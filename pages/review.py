"""Escalation review: the cases the mediator handed to a human, worst first."""
import streamlit as st

from studio.views.review_view import (
    after_save,
    chosen_label,
    escalation_why,
    history_view,
    last_answers_view,
    played_rounds_table,
    queue_view,
)
from studio.review_calibration import add_reviews
from studio.views.run_compare import to_csv_bytes
from studio.views.review_view import (
    describe_run,
    is_llm_run,
    case_agents,
    case_text,
    escalation_queue,
    export_reviews,
    last_answers,
    record_review,
    review_history,
)
from studio.widgets import ProjectError
from studio.views.walkthrough import case_trace
from studio.charts import energy_figure
from studio.tables import MISSING, review_queue_config
from studio.turns import show_agents, show_case_text, show_last_answers
from studio.widgets import disclaimer, pick_run, store
from studio.literal import literal
from studio.views import session_keys as keys

st.title("Escalation review")
disclaimer()
st.write("Each case below ended in STOP_AND_ESCALATE: the agents could not reach a decision the "
         "mediator would certify, so a person decides. Reviews are stored with a timestamp and "
         "never overwritten; a new review of the same case is added to its history.")

# A save ends with a rerun so that the queue and its count show the new review at once;
# the widget values it changes (next case, cleared label and comment) and its message
# are carried over in session state and applied before the widgets are drawn.
st.session_state.update(st.session_state.pop(keys.REVIEW_PENDING, {}))
done = st.session_state.pop(keys.REVIEW_DONE, None)

db = store()
run_id = pick_run(db, key="rv_run") if db else None
if run_id is None:
    st.stop()
llm = is_llm_run(db, run_id)
if llm:
    st.caption(literal(describe_run(db, run_id)))
try:
    queue = escalation_queue(db, run_id, "dcem")
except ProjectError as exc:
    st.error(f"The escalation queue cannot be read: {literal(exc)}")
    st.stop()
if queue.empty:
    st.info("This run has no escalated cases.")
    st.stop()
show_truth = st.toggle("Show the ground truth (evaluation data only)", value=False, key="rv_truth")
shown = queue_view(queue, show_truth=show_truth)
st.progress(shown.reviewed / shown.total, text=shown.progress)
st.caption(shown.caption)
st.dataframe(shown.table, placeholder=MISSING, hide_index=True, key="rv_queue",
             column_config=review_queue_config())

if done:  # above the case it opens, so it never reads as a remark on that case
    st.success(done)
case_id = st.selectbox("Case to review", shown.case_ids, key="rv_case")
trace = case_trace(db, run_id, case_id, "dcem")
st.warning(literal(escalation_why(queue, case_id)))
if llm:
    answers = last_answers_view(last_answers(db, run_id, case_id, "dcem"), trace)
    left, right = st.columns(2)
    with left:
        show_case_text(case_text(db, run_id, case_id))
        show_agents(case_agents(db, run_id, case_id))
    with right:
        show_last_answers(answers, trace.labels, key="rv")
st.plotly_chart(energy_figure(trace.rounds, trace.outcome_round, eps_safe=trace.config.eps_safe,
                              eps_low=trace.config.eps_low), key="rv_energy")
st.dataframe(played_rounds_table(trace), placeholder=MISSING, hide_index=True)

with st.form("rv_form"):
    final = st.selectbox("Final label", list(trace.labels), index=None, placeholder="choose the final label",
                         key="rv_label")
    comment = st.text_area("Comment", max_chars=5000, key="rv_comment")
    reviewer = st.text_input("Reviewer", key="rv_reviewer")
    b1, b2 = st.columns(2)
    save = b1.form_submit_button("Record review", type="primary")
    save_next = b2.form_submit_button("Save and next", help="Record the review, then open the next unreviewed "
                                      "case of the queue.")
if save or save_next:
    try:
        record_review(db, run_id=run_id, case_id=case_id, method="dcem", final_label=chosen_label(final, trace.labels),
                      comment=comment, reviewer=reviewer)
    except ProjectError as exc:
        st.error(f"Not saved: {literal(exc)}")
    else:
        message, following = after_save(queue, case_id, go_next=save_next)
        pending = {"rv_label": None, "rv_comment": ""} | ({"rv_case": following} if following else {})
        st.session_state[keys.REVIEW_PENDING], st.session_state[keys.REVIEW_DONE] = pending, message
        st.rerun()

history = history_view(review_history(db, run_id, case_id))
if history is not None:
    st.write(history.summary)
    st.dataframe(history.table, placeholder=MISSING, hide_index=True)

st.subheader("Use the reviews")
reviews = export_reviews(db, run_id)
e1, e2 = st.columns(2)
e1.download_button("Export reviews (CSV)", to_csv_bytes(reviews), file_name=f"{run_id}-reviews.csv",
                   mime="text/csv", disabled=reviews.empty)
add_reviews(db, run_id, trace.labels, disabled=reviews.empty, column=e2)
