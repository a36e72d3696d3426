"""Calibration sets: load agents' labelled reports and inspect their confusion matrices."""
import streamlit as st

from studio.views.calibration_view import CALIB_SET_KEY, SET_PURPOSE, load_upload, set_caption
from studio.views.calibration_view import ESTIMATOR_CHOICES, ESTIMATOR_NAMES, LABEL_FREE_NOTE
from studio.views.calibration_view import (
    MAX_AGENTS,
    MAX_LABELS,
    example_csv,
    stored_run_calibration_set,
    synthetic_calibration_set,
    CSV_COLUMNS,
    SCENARIOS,
)
from studio.widgets import ProjectError
from studio.calibration_inputs import alpha_field, seed_field, show_matrices
from studio.calibration_session import confirm_replacement, load_failed, offer_set, use_this_set
from studio.widgets import disclaimer, pick_run, store
from studio.literal import literal

st.title("Calibration sets")
disclaimer()
st.write("The mediator reads each agent's calibration confusion matrix to see which diagnoses "
         "a report may hide. Load a set of reports, labelled or not, then check the matrices.")
st.markdown(SET_PURPOSE)

source = st.radio("Source", ["Synthetic scenario", "Stored run", "Upload CSV"], horizontal=True)
if source == "Synthetic scenario":
    c1, c2, c3 = st.columns(3)
    scenario = c1.selectbox("Scenario", SCENARIOS)
    seed = seed_field(c2)
    n = c3.select_slider("Samples", options=[1000, 2000, 5000, 20000], value=2000)
    if st.button("Load synthetic set", type="primary", disabled=not seed.ok) and seed.value is not None:
        with st.spinner("Generating cases and agent reports ..."):
            offer_set(synthetic_calibration_set(scenario, seed.value, int(n)))
elif source == "Stored run":
    db = store()
    run_id = pick_run(db, key="calib_run") if db else None
    if run_id:
        cells = sorted(db.done_cells(run_id))
        cell = st.selectbox("Cell", cells, format_func=lambda c: f"{c[0]} seed {c[1]}")
        hide = st.checkbox("Leave out the true labels (estimate the confusions from the reports alone)",
                           key="calib_run_unlabelled", help=LABEL_FREE_NOTE)
        estimator = st.selectbox("Estimator", ESTIMATOR_CHOICES, format_func=ESTIMATOR_NAMES.get,
                                 key="calib_run_estimator", disabled=not hide)
        if st.button("Load from run", type="primary"):
            try:
                with st.spinner("Reading the run's reports ..."):
                    offer_set(stored_run_calibration_set(
                        db, run_id, cell[0], cell[1], labelled=not hide, estimator=estimator))
            except ProjectError as exc:
                load_failed("The set was not loaded", exc)
else:
    st.markdown(f"CSV with a header row and the columns `{'`, `'.join(CSV_COLUMNS)}`: one row per "
                f"case and agent, at most {MAX_LABELS} labels and {MAX_AGENTS:,} agents. See the example file. "
                f"`{CSV_COLUMNS[-1]}` may be left out, or blank for some cases: {LABEL_FREE_NOTE}")
    st.download_button("Download an example CSV", example_csv(), file_name="calibration_example.csv",
                       mime="text/csv")
    order = st.text_input("Label order (optional, comma-separated)", key="calib_labels")
    estimator = st.selectbox("Cases without a true label are estimated by", ESTIMATOR_CHOICES,
                             format_func=ESTIMATOR_NAMES.get, key="calib_estimator")
    upload = st.file_uploader("Calibration CSV", type=["csv"], key="calib_upload")
    if upload is not None and st.button("Load uploaded file", type="primary"):
        try:
            with st.spinner("Reading the file ..."):
                loaded, warnings = load_upload(upload.getvalue(), order, upload.name, estimator)
        except ProjectError as exc:
            load_failed("The file was not loaded", exc, upload.name)
        else:
            offer_set(loaded)
            for w in warnings:
                st.warning(literal(w))

confirm_replacement()
calib = st.session_state.get(CALIB_SET_KEY)
if calib is None:
    st.info("No calibration set loaded yet.")
    st.stop()

st.subheader(f"Loaded: {literal(calib.source)}")
st.caption(literal(set_caption(calib)))
show_matrices(calib, alpha_field())

use_this_set(calib)
