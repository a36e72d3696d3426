"""The what-if page's calibration-set toggle.

When the Calibration sets page has loaded a set into the session
(:data:`studio.views.calibration_view.CALIB_SET_KEY`) that fits the run (its labels, in
any order, and as many agents as each cell: :func:`dcem.analysis.whatif_calibration.calibration_match`),
the page offers "Use the loaded calibration set (SOURCE)"; switched on, the run is re-scored
with every cell's panel estimated from the set (:func:`studio.memo.calibrated_for`).  A set
that does not fit is named with the reason and nothing is offered.
"""
from __future__ import annotations

import streamlit as st

from studio.views.calibration_view import CALIB_SET_KEY
from dcem.analysis.run_replay import RunReplay
from dcem.analysis.whatif_calibration import calibration_match
from dcem.calibration.fitting import ALPHA
from dcem.calibration.label_free_sets import estimator_note
from dcem.calibration.sets import CalibrationSet
from common.errors import ProjectError
from studio.memo import calibrated_for
from studio.literal import literal
from studio.views.session_keys import WI_CALIB as TOGGLE_KEY

__all__ = ["TOGGLE_KEY", "CALIBRATION_HELP", "calibration_choice"]

CALIBRATION_HELP = (
    f"Every cell's panel gets the set's confusion matrices, smoothed as the run's own were ({ALPHA:g} added to "
    f"each count, {2 * ALPHA:g} to each correct report's), "
    "and, for cells that used the empirical prior, the set's class frequencies as the prior. Thresholds, loss "
    "and the recorded reports stay the run's; the changes compare with the run's own calibration.")


def calibration_choice(replay: RunReplay) -> RunReplay:
    """The replay to re-score: ``replay``, or (toggle on) the run with the loaded set's panels.

    Shows the toggle when the loaded set fits the run, the reason when it does not, and a
    pointer to the Calibration sets page when no set is loaded.
    """
    calib = st.session_state.get(CALIB_SET_KEY)
    if not isinstance(calib, CalibrationSet):
        st.caption("No calibration set is loaded. Load one on the Calibration sets page to re-score this run "
                   "with its confusion matrices.")
        return replay
    match = calibration_match(replay, calib)
    if not match.ok:
        st.warning(f"The loaded calibration set ({literal(calib.source)}) cannot re-score this run: {match.reason} "
                   "Load a set with the run's labels and agents on the Calibration sets page to use one here.")
        return replay
    if not st.toggle(f"Use the loaded calibration set ({calib.source})", key=TOGGLE_KEY, help=CALIBRATION_HELP):
        return replay
    st.caption(CALIBRATION_HELP)
    if calib.estimator != "counts":
        st.caption(estimator_note(calib))
    for note in match.notes:
        st.caption(note)
    try:
        return calibrated_for(replay, calib)
    except ProjectError as exc:
        st.error(f"The loaded calibration set cannot re-score this run: {literal(exc)}")
        return replay
