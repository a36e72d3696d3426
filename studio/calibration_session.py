"""Session glue of the Calibration sets page: the loaded set in session state, a failed
load, a load over a set holding reviewed cases, and the "Use this set" section with its
links to other pages.

The set lives under ``st.session_state[keys.CALIB_SET]``
(:data:`studio.views.calibration_view.CALIB_SET_KEY`).  A failed load removes it, so the
tables of an older set never stand under the error -- except a set the Escalation review
page added reviewed cases to (:func:`mark_reviewed`): it holds work no file holds, so a
failed load leaves it loaded, and loading another set over it waits for a confirmation
(:func:`offer_set`, :func:`confirm_replacement`), with a download of it offered first.
Links use ``st.page_link``, which keeps the session (and so the set); it only knows the
pages the entry script gave to ``st.navigation``, so a page script run on its own
(``streamlit run pages/x.py``, a page test) names the page in plain text instead.
"""
from __future__ import annotations

import streamlit as st
from streamlit.errors import StreamlitAPIException

from studio.views.calibration_view import CALIB_SET_KEY, SET_USES, set_download
from common.errors import InputError
from dcem.calibration.sets import CalibrationSet
from studio.literal import literal
from studio.views import session_keys as keys

__all__ = ["load_failed", "use_this_set", "link_to", "mark_reviewed", "reviewed_cases", "offer_set",
           "confirm_replacement"]


def load_failed(what: str, problem: object, name: str | None = None) -> None:
    """Show ``what: problem`` as an error (a problem with the file as a whole names the
    file, ``name``) and unload the set loaded before, saying so, so that its tables never
    stand under the error -- unless that set holds reviewed cases (:func:`mark_reviewed`),
    work no file holds: it then stays loaded, and the error says so."""
    previous = st.session_state.get(CALIB_SET_KEY)
    if isinstance(problem, InputError) and problem.field == "file" and name:
        problem = f"{name} {str(problem).removeprefix('file: ')}"
    note = ""
    if isinstance(previous, CalibrationSet) and reviewed_cases(previous):
        n = reviewed_cases(previous)
        note = (f"\n\nNothing was discarded: the set loaded before ({literal(previous.source)}) holds {n} reviewed "
                f"case{'s' * (n != 1)} no file holds, so it stays loaded.")
    elif isinstance(previous, CalibrationSet):
        st.session_state.pop(CALIB_SET_KEY, None)
        note = f"\n\nThe set loaded before ({literal(previous.source)}) is unloaded; load a set again."
    st.error(f"{what}: {literal(problem)}{note}")


def mark_reviewed(calib: CalibrationSet, cases: int) -> None:
    """Record that ``calib`` (now the loaded set) holds ``cases`` reviewed cases added on the
    Escalation review page."""
    st.session_state[keys.CALIB_REVIEWED] = (calib, int(cases))


def reviewed_cases(calib: object) -> int:
    """How many reviewed cases the review page added to ``calib`` (0 for any other set)."""
    held = st.session_state.get(keys.CALIB_REVIEWED)
    return int(held[1]) if isinstance(held, tuple) and len(held) == 2 and held[0] is calib else 0


def offer_set(new: CalibrationSet) -> None:
    """Load ``new``; over a set holding reviewed cases, keep that one until the replacement
    is confirmed (:func:`confirm_replacement` asks)."""
    if reviewed_cases(st.session_state.get(CALIB_SET_KEY)):
        st.session_state[keys.CALIB_PENDING] = new
    else:
        st.session_state[CALIB_SET_KEY] = new
        st.session_state.pop(keys.CALIB_PENDING, None)


def _replace() -> None:
    st.session_state[CALIB_SET_KEY] = st.session_state.pop(keys.CALIB_PENDING)


def _keep() -> None:
    st.session_state.pop(keys.CALIB_PENDING, None)


def confirm_replacement() -> None:
    """While a set waits to replace one holding reviewed cases: what would be lost, a
    download of the loaded set, and the choice (replace it, or keep it)."""
    pending = st.session_state.get(keys.CALIB_PENDING)
    current = st.session_state.get(CALIB_SET_KEY)
    if not isinstance(pending, CalibrationSet):
        return
    n = reviewed_cases(current)
    if not n or not isinstance(current, CalibrationSet):
        _replace()
        return
    st.warning(f"The loaded set ({literal(current.source)}) holds {n} reviewed case{'s' * (n != 1)} added on the "
               f"Escalation review page, which no file holds. Loading {literal(pending.source)} would discard "
               "it. Download the loaded set first to keep it, then replace it, or keep it and drop the new one.")
    data, file_name = set_download(current)
    a, b, c = st.columns(3)
    a.download_button("Download the loaded set (CSV)", data, file_name=file_name, mime="text/csv",
                      key="calib_keep_download")
    b.button("Replace it", type="primary", on_click=_replace, key="calib_replace")
    c.button("Keep the loaded set", on_click=_keep, key="calib_keep")


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
