"""Case walkthrough: step through a stored episode round by round."""
import streamlit as st

from dcem.analysis.run_info import describe_run, is_llm_run, run_methods
from dcem.core.vocabulary import mediated_methods
from dcem.store.database import StoreError
from dcem.analysis.walkthrough import (agent_turns, case_agents, case_list, case_text, case_trace, ex_post_confusion,
                              filter_cases, steer_message)
from studio.charts import belief_figure, confusion_figure, energy_figure
from dcem.core.vocabulary import method_label
from studio.turns import show_agents, show_case_text, show_turns
from studio.widgets import disclaimer, pick_run, store

st.title("Case walkthrough")
disclaimer()

db = store()
run_id = pick_run(db) if db else None
if run_id is None:
    st.stop()

llm = is_llm_run(db, run_id)
if llm:
    st.caption(describe_run(db, run_id) + " Every round shows what each agent was told and what it answered.")
methods = run_methods(db, run_id) if llm else ["dcem", "dcem_noesc"]
if not methods:
    st.info("This run has no stored outcomes.")
    st.stop()
method = st.radio("Method", methods, horizontal=True, index=methods.index("dcem") if "dcem" in methods else 0,
                  format_func=lambda m: method_label(m))
mediated = method in mediated_methods()
names: dict = {}  # agent index -> name (language-model runs)
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

    if llm:
        show_case_text(case_text(db, run_id, case_id))
        agents = case_agents(db, run_id, case_id)
        show_agents(agents)
        models = dict(zip(agents["agent"], agents["model"]))
        names = dict(zip(agents["agent"], agents["name"]))
        turns = agent_turns(db, run_id, case_id, method)

    last = trace.outcome_round
    if st.session_state.get("walk_case_seen") != (case_id, method):
        st.session_state["walk_case_seen"] = (case_id, method)
        st.session_state["walk_round"] = 1
    st.session_state["walk_round"] = min(max(int(st.session_state.get("walk_round", 1)), 1), last)
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

    if not mediated:  # Single, Free, Pool of a language-model run: the agents' turns only
        outcome = shown[shown["case_id"] == case_id].iloc[0]
        st.subheader(f"Round {t} of {last}: {method_label(method)}")
        show_turns(turns[turns["round"] == t], labels, key="walk_turns", models=models)
        if t == last:
            st.success(f"Decision {outcome['decision']} ({method_label(method)}, no mediator).")
    else:
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
            who = names.get(a, f"Agent {a + 1}") if llm else f"Agent {a + 1}"
            st.markdown(f"**{who}** reports **{labels[rep]}** (own risk {risk:.3f}); "
                        f"dangerous plausible miss: :red[**{labels[miss]}**]")
        if llm:
            st.markdown("**The agents' answers this round**")
            show_turns(turns[turns["round"] == t], labels, key="walk_turns", models=models)
        if row["action"] == "DIFFERENTIAL_STEER":
            target = int(row["steer_agent"])
            feats = list(row["steer_features"]) if row["steer_features"] is not None else []
            sent = turns[(turns["round"] == t + 1) & (turns["agent"] == target)]["note"] if llm else []
            if len(sent) and sent.iloc[0]:
                name = turns[turns["agent"] == target]["agent_name"].iloc[0]
                st.warning(f"Challenge to {name}, sent with round {t + 1}: {sent.iloc[0]}")
            else:
                current, alternative = labels[int(row["steer_current"])], labels[int(row["steer_alternative"])]
                st.warning(f"Challenge to agent {target + 1}: " + steer_message(current, alternative, feats))
            if feats:
                st.write(("Cues S(t), listed by the agent itself: " if llm else "Feature set S(t): ")
                         + ", ".join(f"`{f}`" for f in feats))
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
    r = st.slider("Round", 1, counts.shape[0], 1, key="conf_round") if counts.shape[0] > 1 else 1
    st.caption("Counts over the evaluation cases, computed after the fact for display; the "
               "mediator uses only the fixed calibration matrices.")
    labels_all = case_trace(db, run_id, cases[cases["scenario"] == scenario]["case_id"].iloc[0], method).labels
    cols = st.columns(counts.shape[1])
    for a, col in enumerate(cols):
        c = counts[r - 1, a]
        rows = c.sum(axis=1, keepdims=True)
        share = c / rows.clip(min=1)
        who = names.get(a, f"Agent {a + 1}") if llm else f"Agent {a + 1}"
        col.plotly_chart(confusion_figure(share, labels_all, f"{who}, round {r}", counts=c),
                         key=f"conf_{a}")
