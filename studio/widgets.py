"""Shared Streamlit widgets: the store connection, the run picker, the disclaimer, titled
tables (the walkthrough's round stepper is :mod:`studio.stepper`)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from dcem.analysis.run_info import RunPick, default_run, run_labels
from dcem.store.database import Store, StoreError, default_db_path
from dcem.store.demo import opening_run
from studio.store_scope import open_for_run
from studio.literal import literal
# names its page imports from here (pages import from studio only)
from common.errors import ProjectError
from studio.views.session_keys import CURRENT_RUN, RUN_PICKS as _PICKS, RUN_SHOWN as _SHOWN

__all__ = ["DISCLAIMER", "CURRENT_RUN", "disclaimer", "store", "pick_run", "set_current_run",
           "titled_table"]

DISCLAIMER = ("Research and teaching tool, not clinical advice. STOP_AND_ESCALATE hands the case "
              "to a human reviewer.")


def disclaimer() -> None:
    st.caption(DISCLAIMER)


def store() -> Store | None:
    """This page run's hold on the result store (:mod:`studio.store_scope`), or None (with
    a message) if it cannot open or another program kept it busy too long."""
    try:
        with st.spinner("Waiting for the result store (another program is writing to it)"):
            return open_for_run(Store, str(default_db_path()))
    except StoreError as exc:
        st.error(f"The result store cannot be opened: {literal(exc)}")
        return None


def pick_run(db: Store, *, key: str = "run_id") -> str | None:
    """Select box over stored runs that hold results, each named with what it ran and when
    (:func:`dcem.analysis.run_info.run_label`); None when there are none.

    It opens on the session's current run (:data:`CURRENT_RUN`, set by a launch on the
    Experiments page when it finishes or stops) unless the person picked another run in
    this picker since that launch (:func:`dcem.analysis.run_info.default_run`); with no
    current run, a store of demo data only opens on the demo's featured run
    (:func:`dcem.store.demo.opening_run`).  A value
    set under ``key`` before the call (a deep link, say) counts as such a pick.
    """
    with_cells = [str(r) for r in db.runs()["run_id"] if db.done_cells(r)]
    if not with_cells:
        st.info("No experiment results are stored yet. Run one from the Experiments page or with "
                "`python -m dcem run synthetic`.")
        return None
    state = st.session_state
    picks: dict[str, RunPick] = state.setdefault(_PICKS, {})
    shown: dict[str, str] = state.setdefault(_SHOWN, {})
    chosen = state.get(key)
    if chosen in with_cells and chosen != shown.get(key):  # picked in the box, or preset (a deep link)
        picks[key] = RunPick(str(chosen), state.get(CURRENT_RUN))
    state[key] = shown[key] = default_run(with_cells, current=state.get(CURRENT_RUN), picked=picks.get(key),
                                          featured=opening_run(with_cells))
    labels = run_labels(db)
    return st.selectbox("Run", with_cells, key=key, format_func=lambda r: labels.get(r, r))


def set_current_run(run_id: str) -> None:
    """Make ``run_id`` the run every page's picker opens on (until the next launch)."""
    st.session_state[CURRENT_RUN] = run_id


def titled_table(title: str, frame: pd.DataFrame, *, empty: str, key: str, wide: str | None = None) -> None:
    """A subheader, then the table (``wide``: a text column shown wide) or, when the
    frame is empty, the ``empty`` caption."""
    st.subheader(title)
    if frame.empty:
        st.caption(empty)
        return
    config = {wide: st.column_config.TextColumn(wide, width="large")} if wide else None
    st.dataframe(frame, hide_index=True, key=key, column_config=config)
