"""Escalation review: the cases the mediator handed to a human, worst first."""
import streamlit as st

from dcem.calibration.sets import rows_to_set
from dcem.errors import DcemError
from dcem.store.reviews import (escalation_queue, export_reviews, last_answers, record_review, review_history,
                          reviewed_as_calibration_rows)
from dcem.analysis.run_compare import to_csv_bytes
from dcem.analysis.run_info import describe_run, is_llm_run
from dcem.analysis.walkthrough import case_agents, case_text, case_trace
from studio.charts import agent_probability_figure, energy_figure
from studio.turns import show_agents, show_case_text
from studio.widgets import disclaimer, pick_run, store

st.title("Escalation review")
disclaimer()
st.write("Each case below ended in STOP_AND_ESCALATE: the agents could not reach a decision the "
         "mediator would certify, so a person decides. Reviews are stored with a timestamp and "
         "never overwritten; a new review of the same case is added to its history.")

db = store()
run_id = pick_run(db, key="rv_run") if db else None
if run_id is None:
    st.stop()
llm = is_llm_run(db, run_id)
if llm:
    st.caption(describe_run(db, run_id))
try:
    queue = escalation_queue(db, run_id, "dcem")
except DcemError as exc:
    st.error(f"The escalation queue cannot be read: {exc}")
    st.stop()
if queue.empty:
    st.info("This run has no escalated cases.")
    st.stop()
show_truth = st.toggle("Show the ground truth (evaluation data only)", value=False, key="rv_truth")
columns = ["case_id", "scenario", "seed", "energy", "margin", "descent", "steers", "rounds", "reviewed",
           "review_label", "why"] + (["truth_label"] if show_truth else [])
st.caption(f"{len(queue)} escalated cases, {int(queue['reviewed'].sum())} reviewed; worst first "
           "(highest final energy, then smallest margin, then slowest descent).")
st.dataframe(queue[columns], hide_index=True, key="rv_queue")

case_id = st.selectbox("Case to review", queue["case_id"].tolist(), key="rv_case")
row = queue[queue["case_id"] == case_id].iloc[0]
trace = case_trace(db, run_id, case_id, "dcem")
st.warning(f"Why it escalated: {row['why']}")
if llm:
    answers = last_answers(db, run_id, case_id, "dcem")
    left, right = st.columns(2)
    with left:
        show_case_text(case_text(db, run_id, case_id))
        show_agents(case_agents(db, run_id, case_id))
    with right:
        r = int(answers["round"].max()) if not answers.empty else trace.outcome_round
        st.markdown(f"**Each agent's last answer (round {r}, when the mediator escalated)**")
        if answers.empty:
            st.caption("No agent turn is stored for this case.")
        else:
            st.dataframe(answers[["agent_name", "model", "label", "probability", "runner_up",
                                  "runner_up_probability", "error"]]
                         .rename(columns={"agent_name": "agent", "label": "answer"}).round(3),
                         hide_index=True, key="rv_answers")
            st.plotly_chart(agent_probability_figure(trace.labels, answers["agent_name"].tolist(),
                                                     answers["probabilities"].tolist(), answers["label"].tolist()),
                            key="rv_probs")
            for turn in answers.itertuples(index=False):
                if turn.error:
                    st.error(f"⚠ {turn.agent_name}: {turn.error}".replace("\n", " "))
cfg = trace.config
st.plotly_chart(energy_figure(trace.rounds, trace.outcome_round, eps_safe=cfg.eps_safe, eps_low=cfg.eps_low),
                key="rv_energy")
played = trace.rounds[~trace.rounds["after_outcome"]]
st.dataframe({"round": played["round"].tolist(),
              "reports": [", ".join(trace.labels[r] for r in reps) for reps in played["reports"]],
              "decision": [trace.labels[int(d)] for d in played["decision"]],
              "action": played["action"].tolist(),
              "energy": played["energy"].round(3).tolist()}, hide_index=True)

with st.form("rv_form", clear_on_submit=True):
    final = st.selectbox("Final label", list(trace.labels), key="rv_label")
    comment = st.text_area("Comment", max_chars=5000, key="rv_comment")
    reviewer = st.text_input("Reviewer", key="rv_reviewer")
    if st.form_submit_button("Record review", type="primary"):
        try:
            record_review(db, run_id=run_id, case_id=case_id, method="dcem", final_label=final,
                          comment=comment, reviewer=reviewer)
        except DcemError as exc:
            st.error(str(exc))
        else:
            st.success(f"Review of {case_id} recorded.")

history = review_history(db, run_id, case_id)
if not history.empty:
    st.write(f"History of this case: {len(history)} review(s), oldest first; by "
             + ", ".join(history["reviewer"]))
    st.dataframe(history[["created_at", "reviewer", "final_label", "comment"]], hide_index=True)

st.subheader("Use the reviews")
reviews = export_reviews(db, run_id)
e1, e2 = st.columns(2)
e1.download_button("Export reviews (CSV)", to_csv_bytes(reviews), file_name=f"{run_id}-reviews.csv",
                   mime="text/csv", disabled=reviews.empty)
if e2.button("Add reviewed cases to the calibration set", disabled=reviews.empty):
    rows = reviewed_as_calibration_rows(db, run_id, "dcem")
    try:
        added = rows_to_set(rows, trace.labels, f"reviews of run {run_id}")
        current = st.session_state.get("calib_set")
        st.session_state["calib_set"] = current.merge(added) if current is not None else added
    except DcemError as exc:
        st.error(f"The reviewed cases could not be added: {exc}")
    else:
        st.success(f"{added.n_cases} reviewed cases are now in the calibration set "
                   "(see the Calibration sets page).")
