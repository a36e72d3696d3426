"""Loss and thresholds (what-if): re-score a whole stored run as the settings change."""
import streamlit as st

from studio.views.run_compare import stopped_note
from studio.whatif_settings import (
    inert_parameters,
    losses_differ,
    parameter_notes,
    per_cell_values,
    run_settings,
    scope_note,
    settings_changes,
    mediated_methods,
    list_presets,
    load_preset,
    save_preset,
)
from studio.widgets import ProjectError
from studio.views.loss_input import loss_change_words
from studio.memo import replay_for
from studio.whatif_calibration import calibration_choice
from studio.whatif_inputs import loss_section, parameter_widgets, refusal_text
from studio.whatif_settings import apply_preset, reset_for_run, reset_to_run_settings, seed_defaults
from studio.whatif_refit import refit_choice
from studio.whatif_risk import risk_section
from studio.whatif_view import settle, show_results
from studio.widgets import disclaimer, pick_run, store
from studio.literal import literal
from studio.views import session_keys as keys

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
    except ProjectError as exc:
        st.error(f"This run cannot be re-scored: {literal(exc)}")
        st.stop()
if any(cell.probabilities is not None for cell in replay.cells):
    st.caption("This run's agents reported probability vectors: those are re-scored, round by round.")
if (stopped := stopped_note(db, run_id)) is not None:
    st.warning(stopped)
replay = calibration_choice(replay)
first = replay.cells[0]
labels = list(first.panel.labels)
reference, spread = run_settings(replay), per_cell_values(replay)
escalation = mediated_methods()[method]
inert = inert_parameters(replay.max_rounds, escalation)
seed_defaults(reference, replay.max_rounds, first.panel.loss, [labels[i] for i in first.high_risk], labels)

st.button("Reset to run settings", on_click=reset_to_run_settings, key="wi_reset",
          help="Every parameter and the loss matrix go back to the run's own (each cell's fitted thresholds), "
               "and the run's own calibration is used again.")
if st.session_state.pop(keys.WI_RESET_NOTE, False):
    st.success("Every setting, the loss matrix and the calibration are back to the run's own; every change shows 0.")

with st.expander("Presets", expanded=False):
    presets = list_presets(db)
    if not presets.empty:
        chosen = st.selectbox("Saved preset", presets["name"].tolist(), key="wi_preset_pick")
        if st.button("Apply preset"):
            try:
                cfg_p, loss_p = load_preset(db, chosen)
            except ProjectError as exc:
                st.error(f"The preset cannot be applied: {literal(exc)}")
            else:
                saved = presets.loc[presets["name"] == chosen, "labels"].iloc[0]
                notes = apply_preset(cfg_p, loss_p, None if saved is None else list(saved), labels, first.config,
                                     replay.max_rounds)
                st.session_state[keys.WI_PRESET_NOTES] = notes
                st.rerun()
        for note in st.session_state.pop(keys.WI_PRESET_NOTES, []):
            st.info(f"Preset applied, but {note}.")

st.subheader("Loss matrix L[d, y]")
loss, refused = loss_section(labels)
if refused is not None:
    st.error(refusal_text(refused))
if losses_differ(replay):
    st.caption("The run's cells have different loss matrices: the table shows the first cell's; until you "
               "edit it each cell keeps its own, after that your matrix applies to every cell.")

st.subheader("Policy parameters")
values = parameter_widgets(reference, replay.max_rounds, spread, inert, parameter_notes(escalation))
changes = settings_changes(values, reference, inert)
st.info(scope_note(changes, spread, replay.calibration, loss_change_words(loss, first.panel.loss, labels)))
scored = refit_choice(db, replay, loss, refused, changes)

valid, stale = settle(scored, values, changes, loss, refused)
if valid is None:
    st.info("No valid settings yet: fix the input above or press \"Reset to run settings\".")
    st.stop()
show_results(scored, valid, inert, stale=stale, refitted=scored is not replay)
risk_section(replay)

with st.form("wi_save"):
    name = st.text_input("Preset name")
    note = st.text_input("Note (optional)")
    st.caption("Saves the values on the sliders and the loss matrix; a parameter still kept per cell is "
               "saved with the first cell's value.")
    if st.form_submit_button("Save as preset", disabled=stale):
        try:
            saved_loss = first.panel.loss if valid.loss is None else valid.loss
            save_preset(db, name, first.config.with_changes(**valid.values), saved_loss, labels, note)
        except ProjectError as exc:
            st.error(literal(exc))
        else:
            st.success(f"Saved preset {literal(repr(name))}.")
