"""Session glue of the Calibration sets page: the loaded set in session state, a failed
load, and the "Use this set" section with its links to other pages.

The set lives under ``st.session_state[keys.CALIB_SET]``
(:data:`studio.views.calibration_view.CALIB_SET_KEY`).  A failed load removes it, so the
tables of an older set never stand under the error.  Links use ``st.page_link``, which
keeps the session (and so the set); it only knows the pages the entry script gave to
``st.navigation``, so a page script run on its own (``streamlit run pages/x.py``, a page
test) names the page in plain text instead.
"""
from __future__ import annotations

import streamlit as st
from streamlit.errors import StreamlitAPIException

from studio.views.calibration_view import CALIB_SET_KEY, SET_USES, set_download
from dcem.calibration.sets import CalibrationSet
from studio.literal import literal
from studio.views import session_keys as keys

__all__ = ["load_failed", "use_this_set", "link_to"]


def load_failed(what: str, problem: object) -> None:
    """Show ``what: problem`` as an error and unload the set loaded before (saying so)."""
    previous = st.session_state.pop(CALIB_SET_KEY, None)
    note = (f"\n\nThe set loaded before ({literal(previous.source)}) is unloaded; load a set again."
            if isinstance(previous, CalibrationSet) else "")
    st.error(f"{what}: {literal(problem)}{note}")


def link_to(page: str, title: str, does: str, label: str | None = None) -> None:
    """A link to ``page`` (a path like ``pages/review.py``) labelled ``label`` (default: the
    ``title``), then a caption with what that page ``does``; the label and the page's title
    in plain text when the page is not in the navigation."""
    shown = label or title
    try:
        st.page_link(page, label=shown, icon=":material/arrow_forward:")
    except StreamlitAPIException:
        st.markdown(f"**{shown}** (the {title} page, in the sidebar)" if shown != title
                    else f"**{title}** (in the sidebar)")
    st.caption(f"{title} {does}")


def use_this_set(calib: CalibrationSet) -> None:
    """Download the set as CSV, where it stays, and what the other pages do with a set."""
    st.subheader("Use this set")
    data, file_name = set_download(calib)
    st.download_button("Download this set (CSV)", data, file_name=file_name, mime="text/csv", key="calib_download",
                       help="The upload format: load it again here with Upload CSV, or keep and share it.")
    st.caption(f"The set stays loaded for this browser session (session-state key `{CALIB_SET_KEY}`) until "
               "another set is loaded or a load fails.")
    for use in SET_USES:
        link_to(use.page, use.title, use.does, use.label)
