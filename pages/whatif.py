"""Loss and thresholds (what-if): re-score a whole stored run as the settings change."""
import numpy as np
import pandas as pd
import streamlit as st

from dcem.core.config import MediatorConfig
from dcem.errors import DcemError
from dcem.core.panel import three_level_loss
from dcem.store.presets import list_presets, load_preset, save_preset
from dcem.analysis.whatif import SWEEP_PARAMETERS, rescore
from studio.whatif_charts import action_mix_figure, tradeoff_figure
from studio.memo import original_for, replay_for, sweep_for, sweep_values
from dcem.core.vocabulary import STEER_GATES
from studio.whatif_settings import apply_preset, reset_for_run, seed_defaults, slider_bounds
from studio.widgets import disclaimer, pick_run, store

st.title("Loss and thresholds (what-if)")
disclaimer()
st.write("Every change re-scores all stored trajectories of the run at once. No agent is asked "
         "again: the recorded reports are replayed, so a different steer cannot change them. "
         "For a run of language-model agents the recorded probability vectors (each agent's answer "
         "distribution in every round) are re-scored; the models are not asked again.")

db = store()
run_id = pick_run(db, key="wi_run") if db else None
if run_id is None:
    st.stop()
reset_for_run(run_id)
method = st.radio("Method", ["dcem", "dcem_noesc"], horizontal=True, key="wi_method",
                  format_func={"dcem": "D-CEM", "dcem_noesc": "D-CEM without escalation"}.get)
with st.spinner("Loading the run's trajectories ..."):
    try:
        replay = replay_for(db, run_id, method)
    except DcemError as exc:
        st.error(f"This run cannot be re-scored: {exc}".replace("\n", " "))
        st.stop()
if any(cell.probabilities is not None for cell in replay.cells):
    st.caption("This run's agents reported probability vectors: those are re-scored, round by round.")
first = replay.cells[0]
labels = list(first.panel.labels)
start = first.config

with st.expander("Presets", expanded=False):
    presets = list_presets(db)
    if not presets.empty:
        chosen = st.selectbox("Saved preset", presets["name"].tolist(), key="wi_preset_pick")
        if st.button("Apply preset"):
            try:
                cfg_p, loss_p = load_preset(db, chosen)
            except DcemError as exc:
                st.error(f"The preset cannot be applied: {exc}")
            else:
                saved = presets.loc[presets["name"] == chosen, "labels"].iloc[0]
                notes = apply_preset(cfg_p, loss_p, None if saved is None else list(saved), labels, start,
                                     replay.max_rounds)
                st.session_state["wi_preset_notes"] = notes
                st.rerun()
        for note in st.session_state.pop("wi_preset_notes", []):
            st.info(f"Preset applied, but {note}.")

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


def _slider(col, field: str) -> float:
    low, high, step = slider_bounds(field, float(getattr(start, field)))
    return col.slider(field, low, high, step=step, key=f"wi_{field}")


seed_defaults(start, replay.max_rounds)
s1, s2, s3 = st.columns(3)
values = {"eps_safe": _slider(s1, "eps_safe"), "eps_low": _slider(s1, "eps_low"), "m_safe": _slider(s1, "m_safe"),
          "delta": _slider(s2, "delta"), "s_asym": _slider(s2, "s_asym"),
          "window": s2.slider("window W", 1, 6, key="wi_window")}
if replay.max_rounds > 1:
    values["t_max"] = s2.slider("round budget t_max", 1, replay.max_rounds, key="wi_t_max")
else:
    values["t_max"] = 1
    s2.caption("Round budget t_max: 1 (the run stored one round).")
values.update({"alpha": _slider(s3, "alpha"), "beta": _slider(s3, "beta"), "gamma": _slider(s3, "gamma")})
with st.expander("Pooling and steering"):
    q1, q2 = st.columns(2)
    values["lambda_pool"] = _slider(q1, "lambda_pool")
    values["rho_min"] = _slider(q1, "rho_min")
    values["omega_min"] = _slider(q2, "omega_min")
    values["steer_gate"] = q2.selectbox("steer gate", STEER_GATES, key="wi_steer_gate")
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
grid = sweep_values(parameter, float(getattr(start, parameter)))
curve = sweep_for(replay, parameter, config, edited.to_numpy(dtype=float), grid)
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
