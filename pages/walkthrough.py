"""Case walkthrough: step through a stored episode round by round."""
import streamlit as st

from dcem.store import StoreError
from dcem.walkthrough import case_list, case_trace, ex_post_confusion, filter_cases, steer_message
from studio.charts import belief_figure, confusion_figure, energy_figure
from studio.widgets import disclaimer, pick_run, store

st.title("Case walkthrough")
disclaimer()

db = store()
run_id = pick_run(db) if db else None
if run_id is None:
    st.stop()

method = st.radio("Method", ["dcem", "dcem_noesc"], horizontal=True,
                  format_func={"dcem": "D-CEM", "dcem_noesc": "D-CEM without escalation"}.get)
cases = case_list(db, run_id, method)
episode_tab, confusion_tab = st.tabs(["Episode", "Round-wise confusion (ex post)"])

with episode_tab:
    f1, f2, f3 = st.columns(3)
    scenarios = f1.multiselect("Scenario", sorted(cases["scenario"].unique()))
    actions = f2.multiselect("Outcome", sorted(cases["action"].unique()))
    truths = f3.multiselect("True class", sorted(cases["truth"].unique()))
    g1, g2 = st.columns(2)
    harmful = g1.checkbox("Harmful consensus only")
    escalated = g2.checkbox("Escalated only")
    shown = filter_cases(cases, scenarios=scenarios, actions=actions, truths=truths,
                         harmful_only=harmful, escalated_only=escalated)
    st.caption(f"{len(shown)} of {len(cases)} cases match.")
    if shown.empty:
        st.stop()
    case_id = st.selectbox("Case", shown["case_id"].tolist(), key="walk_case")
    try:
        trace = case_trace(db, run_id, case_id, method)
    except StoreError as exc:
        st.error(str(exc))
        st.stop()

    last = trace.outcome_round
    if st.session_state.get("walk_case_seen") != case_id:
        st.session_state["walk_case_seen"] = case_id
        st.session_state["walk_round"] = 1
    b1, b2, _ = st.columns([1, 1, 3])
    b1.button("◀ Previous", disabled=st.session_state["walk_round"] <= 1,
              on_click=lambda: st.session_state.update(walk_round=st.session_state["walk_round"] - 1))
    b2.button("Next ▶", disabled=st.session_state["walk_round"] >= last,
              on_click=lambda: st.session_state.update(walk_round=st.session_state["walk_round"] + 1))
    if last > 1:
        st.slider("Round", 1, last, key="walk_round")
    t = int(st.session_state["walk_round"])
    row = trace.rounds[trace.rounds["round"] == t].iloc[0]
    labels = trace.labels

    st.subheader(f"Round {t} of {last}: {row['action']}")
    cfg = trace.config
    left, right = st.columns(2)
    left.plotly_chart(energy_figure(trace.rounds, t, eps_safe=cfg.eps_safe, eps_low=cfg.eps_low),
                      key="walk_energy")
    right.plotly_chart(belief_figure(labels, row["posteriors"], row["pooled"], row["reports"],
                                     row["dangerous_miss"], int(row["decision"])), key="walk_belief")
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Bayes decision", labels[int(row["decision"])])
    m2.metric("Runner-up", labels[int(row["runner_up"])])
    m3.metric("Margin", f"{row['margin']:.3f}")
    m4.metric("Energy", f"{row['energy']:.3f}")
    for a, (rep, miss, risk) in enumerate(zip(row["reports"], row["dangerous_miss"], row["agent_risk"])):
        st.markdown(f"**Agent {a + 1}** reports **{labels[rep]}** (own risk {risk:.3f}); "
                    f"dangerous plausible miss: :red[**{labels[miss]}**]")
    if row["action"] == "DIFFERENTIAL_STEER":
        target = int(row["steer_agent"])
        feats = list(row["steer_features"]) if row["steer_features"] is not None else []
        st.warning(f"Challenge to agent {target + 1}: "
                   + steer_message(labels[int(row["steer_current"])], labels[int(row["steer_alternative"])], feats))
        if feats:
            st.write("Feature set S(t): " + ", ".join(f"`{f}`" for f in feats))
    elif row["action"] == "STOP_AND_ESCALATE":
        st.error("Escalated: the case goes to a human reviewer; no autonomous decision is made.")
    elif row["action"] == "STOP_AND_DECIDE":
        kind = "certified" if row["certified"] else "round budget reached, not certified"
        st.success(f"Decision {labels[int(row['decision'])]} ({kind}).")
    if st.toggle("Reveal the ground truth (teaching mode)", key="walk_reveal"):
        st.info(f"True label: **{trace.truth}**")

with confusion_tab:
    scenario = st.selectbox("Scenario", sorted(cases["scenario"].unique()), key="conf_scenario")
    counts = ex_post_confusion(db, run_id, scenario, method)
    r = st.slider("Round", 1, counts.shape[0], 1, key="conf_round")
    st.caption("Counts over the evaluation cases, computed after the fact for display; the "
               "mediator uses only the fixed calibration matrices.")
    labels_all = case_trace(db, run_id, cases[cases["scenario"] == scenario]["case_id"].iloc[0], method).labels
    cols = st.columns(counts.shape[1])
    for a, col in enumerate(cols):
        c = counts[r - 1, a]
        rows = c.sum(axis=1, keepdims=True)
        share = c / rows.clip(min=1)
        col.plotly_chart(confusion_figure(share, labels_all, f"Agent {a + 1}, round {r}", counts=c),
                         key=f"conf_{a}")
