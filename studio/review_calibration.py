"""The Escalation review page's "Add reviewed cases to the calibration set": the reviews
join the loaded set at once when nothing differs, and otherwise wait while the page says
what differs (other cells, other agents, a set from elsewhere) and asks: add them anyway,
or leave the set as it is.  The set the reviews made is marked as holding reviewed cases
(:func:`studio.calibration_session.mark_reviewed`), so the Calibration sets page asks
before a load would discard it.
"""
from __future__ import annotations

from typing import Sequence

import streamlit as st

from common.errors import ProjectError
from dcem.store.database import Store
from studio.calibration_session import mark_reviewed, reviewed_cases
from studio.literal import literal
from studio.views import session_keys as keys
from studio.views.calibration_view import CALIB_SET_KEY
from studio.views.review_merge import MergePlan, review_merge_plan

__all__ = ["add_reviews"]


def _apply(plan: MergePlan) -> str:
    merged = plan.merged
    before = reviewed_cases(plan.current) if plan.current is not None else 0
    st.session_state[CALIB_SET_KEY] = merged.calibration_set
    mark_reviewed(merged.calibration_set, before + merged.labelled + merged.added)
    return merged.message


def _decide(run_id: str, add: bool) -> None:
    """The callback of the question's buttons: add the waiting reviews, or drop them; the
    slot then holds the message the next page run shows."""
    pending = st.session_state.get(keys.REVIEW_MERGE)
    if not (isinstance(pending, tuple) and len(pending) == 2 and isinstance(pending[1], MergePlan)):
        return
    plan = pending[1]
    if not add:
        st.session_state[keys.REVIEW_MERGE] = ("info", "Nothing was added; the calibration set is as it was.")
    elif st.session_state.get(CALIB_SET_KEY) is not plan.current:
        st.session_state[keys.REVIEW_MERGE] = ("info", "The loaded calibration set changed since the reviews were "
                                                       "about to join it; nothing was added. Add them again.")
    else:
        st.session_state[keys.REVIEW_MERGE] = ("success", _apply(plan))


def _confirm(run_id: str) -> None:
    """The waiting reviews' question, or the message of the answer just given."""
    slot = st.session_state.get(keys.REVIEW_MERGE)
    if isinstance(slot, tuple) and len(slot) == 2 and slot[0] in ("info", "success") and isinstance(slot[1], str):
        st.session_state.pop(keys.REVIEW_MERGE, None)
        (st.success if slot[0] == "success" else st.info)(slot[1])
        return
    if not (isinstance(slot, tuple) and len(slot) == 2 and slot[0] == run_id and isinstance(slot[1], MergePlan)):
        st.session_state.pop(keys.REVIEW_MERGE, None)
        return
    st.warning("Before the reviewed cases join the calibration set: " + " ".join(literal(d) for d in slot[1].differences))
    a, b = st.columns(2)
    a.button("Add them anyway", type="primary", key="rv_merge_yes", on_click=_decide, args=(run_id, True))
    b.button("Cancel: leave the set as it is", key="rv_merge_no", on_click=_decide, args=(run_id, False))


def add_reviews(db: Store, run_id: str, labels: Sequence[str], *, disabled: bool, column: object) -> None:
    """The button (in ``column``) and, when the reviews would join with differences, the
    question; the reviews join at once when nothing differs."""
    if column.button("Add reviewed cases to the calibration set", disabled=disabled):  # type: ignore[attr-defined]
        try:
            plan = review_merge_plan(db, run_id, labels, st.session_state.get(CALIB_SET_KEY))
        except ProjectError as exc:
            st.session_state.pop(keys.REVIEW_MERGE, None)
            st.error(f"The reviewed cases could not be added: {literal(exc)}")
            return
        if not plan.ask_first:
            st.session_state.pop(keys.REVIEW_MERGE, None)
            st.success(_apply(plan))
            return
        st.session_state[keys.REVIEW_MERGE] = (run_id, plan)
    _confirm(run_id)
