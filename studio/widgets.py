"""Shared Streamlit widgets: the store connection, the run picker, the disclaimer."""
from __future__ import annotations

import streamlit as st

from dcem.store.database import Store, StoreError, default_db_path

__all__ = ["DISCLAIMER", "disclaimer", "store", "pick_run"]

DISCLAIMER = ("Research and teaching tool, not clinical advice. STOP_AND_ESCALATE hands the case "
              "to a human reviewer.")


def disclaimer() -> None:
    st.caption(DISCLAIMER)


@st.cache_resource(show_spinner=False)
def _shared_store(path: str) -> Store:
    return Store(path)


def store() -> Store | None:
    """This session's view of the result store, or None (with a message) if it cannot open."""
    path = str(default_db_path())
    try:
        shared = _shared_store(path)
    except StoreError as exc:
        st.error(f"The result store cannot be opened: {exc}")
        return None
    return shared.session()


def pick_run(db: Store, *, key: str = "run_id") -> str | None:
    """Select box over stored runs that hold results; None when there are none."""
    runs = db.runs()
    with_cells = [r for r in runs["run_id"] if db.done_cells(r)]
    if not with_cells:
        st.info("No experiment results are stored yet. Run one from the Experiments page or with "
                "`python -m dcem run synthetic`.")
        return None
    return st.selectbox("Run", with_cells, key=key)
