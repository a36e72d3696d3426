"""Loss and thresholds (what-if): re-score a whole stored run as the settings change."""
import numpy as np
import pandas as pd
import streamlit as st

from dcem.config import MediatorConfig
from dcem.errors import DcemError
from dcem.panel import three_level_loss
from dcem.presets import list_presets, load_preset, save_preset
from dcem.whatif import SWEEP_PARAMETERS, rescore
from studio.charts import action_mix_figure, tradeoff_figure
from studio.memo import original_for, replay_for, sweep_for, sweep_values
from studio.widgets import disclaimer, pick_run, store

st.title("Loss and thresholds (what-if)")
disclaimer()
st.write("Every change re-scores all stored trajectories of the run at once. No agent is asked "
         "again: the recorded reports are replayed, so a different steer cannot change them.")

db = store()
run_id = pick_run(db, key="wi_run") if db else None
if run_id is None:
    st.stop()
method = st.radio("Method", ["dcem", "dcem_noesc"], horizontal=True, key="wi_method",
                  format_func={"dcem": "D-CEM", "dcem_noesc": "D-CEM without escalation"}.get)
with st.spinner("Loading the run's trajectories ..."):
    replay = replay_for(db, run_id, method)
first = replay.cells[0]
labels = list(first.panel.labels)
start = first.config

with st.expander("Presets", expanded=False):
    presets = list_presets(db)
    if not presets.empty:
        chosen = st.selectbox("Saved preset", presets["name"].tolist(), key="wi_preset_pick")
        if st.button("Apply preset"):
            cfg_p, loss_p = load_preset(db, chosen)
            for field in ("eps_safe", "eps_low", "m_safe", "delta", "s_asym", "window", "alpha", "beta",
                          "gamma", "lambda_pool", "rho_min", "omega_min"):
                st.session_state[f"wi_{field}"] = getattr(cfg_p, field)
            st.session_state["wi_steer_gate"] = cfg_p.steer_gate
            if loss_p is not None and loss_p.shape == (len(labels), len(labels)):
                st.session_state["wi_loss"] = loss_p
            st.rerun()

st.subheader("Loss matrix L[d, y]")
if "wi_loss" not in st.session_state:
    st.session_state["wi_loss"] = np.array(first.panel.loss)
p1, p2, p3 = st.columns([2, 1, 1])
high = p1.multiselect("High-risk classes", labels, default=[labels[i] for i in first.high_risk], key="wi_high")
l_high = p2.number_input("l_high", 0.0, 100.0, 3.0, 0.5, key="wi_lhigh")
if p3.button("Apply {0, 1, l_high} preset"):
    st.session_state["wi_loss"] = three_level_loss(len(labels), [labels.index(h) for h in high], l_high)
    st.session_state.pop("wi_loss_editor", None)
edited = st.data_editor(pd.DataFrame(st.session_state["wi_loss"], index=labels, columns=labels),
                        key="wi_loss_editor")
st.caption("Rows: decision d; columns: true label y.")

st.subheader("Policy parameters")
s1, s2, s3 = st.columns(3)
values = {
    "eps_safe": s1.slider("eps_safe", 0.0, 10.0, float(start.eps_safe), 0.05, key="wi_eps_safe"),
    "eps_low": s1.slider("eps_low", 0.0, 10.0, float(start.eps_low), 0.05, key="wi_eps_low"),
    "m_safe": s1.slider("m_safe", 0.0, 3.0, float(start.m_safe), 0.01, key="wi_m_safe"),
    "delta": s2.slider("delta", -1.0, 2.0, float(start.delta), 0.01, key="wi_delta"),
    "s_asym": s2.slider("s_asym", 0.0, 5.0, float(start.s_asym), 0.05, key="wi_s_asym"),
    "window": s2.slider("window W", 1, 6, int(start.window), key="wi_window"),
    "t_max": s2.slider("round budget t_max", 1, replay.max_rounds, min(int(start.t_max), replay.max_rounds),
                       key="wi_t_max"),
    "alpha": s3.slider("alpha", 0.0, 3.0, float(start.alpha), 0.05, key="wi_alpha"),
    "beta": s3.slider("beta", 0.0, 3.0, float(start.beta), 0.05, key="wi_beta"),
    "gamma": s3.slider("gamma", 0.0, 3.0, float(start.gamma), 0.05, key="wi_gamma"),
}
with st.expander("Pooling and steering"):
    q1, q2 = st.columns(2)
    values["lambda_pool"] = q1.slider("lambda_pool", 0.0, 5.0, float(start.lambda_pool), 0.1, key="wi_lambda_pool")
    values["rho_min"] = q1.slider("rho_min", 0.001, 0.5, float(start.rho_min), 0.001, key="wi_rho_min")
    values["omega_min"] = q2.slider("omega_min", 0.0, 0.5, float(start.omega_min), 0.01, key="wi_omega_min")
    values["steer_gate"] = q2.selectbox("steer gate", ["risk", "reliability_gap"], key="wi_steer_gate")
per_cell = st.toggle("Keep each cell's fitted eps_safe, eps_low, m_safe and delta", value=False, key="wi_percell")

try:
    config = start.with_changes(**values)
    result = rescore(replay, config=config, loss=edited.to_numpy(dtype=float), per_cell_thresholds=per_cell)
except (DcemError, ValueError) as exc:
    st.error(f"Settings refused: {exc}")
    st.stop()
before, original = original_for(replay)

st.subheader(f"Metrics over {replay.n_cases} cases")
k1, k2, k3, k4 = st.columns(4)
for col, key, label in ((k1, "certified_rate", "Certified"), (k2, "escalation_rate", "Escalated"),
                        (k3, "harmful_consensus", "Harmful consensus"), (k4, "system_risk", "System risk")):
    col.metric(label, f"{result.metrics[key]:.3f}", f"{result.metrics[key] - original[key]:+.3f} vs original",
               delta_color="off")
st.dataframe(pd.DataFrame({"current": result.metrics, "original settings": original})
             .assign(change=lambda d: d["current"] - d["original settings"]), key="wi_metrics")
st.dataframe(result.per_scenario, hide_index=True)
c1, c2 = st.columns(2)
c1.plotly_chart(action_mix_figure(result.outcome_mix, before.outcome_mix), key="wi_mix")
parameter = c2.selectbox("Sweep parameter", SWEEP_PARAMETERS, key="wi_sweep_param")
current = float(getattr(config, parameter))
curve = sweep_for(replay, parameter, config, edited.to_numpy(dtype=float), sweep_values(parameter, float(getattr(start, parameter))))
y = c2.radio("Against", ["harmful_consensus", "system_risk"], horizontal=True, key="wi_sweep_y")
c2.plotly_chart(tradeoff_figure(curve, parameter, current, result.metrics, y), key="wi_tradeoff")

with st.form("wi_save"):
    name = st.text_input("Preset name")
    note = st.text_input("Note (optional)")
    if st.form_submit_button("Save as preset"):
        try:
            save_preset(db, name, config, edited.to_numpy(dtype=float), labels, note)
        except DcemError as exc:
            st.error(str(exc))
        else:
            st.success(f"Saved preset {name!r}.")
