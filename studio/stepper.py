"""A round stepper for a narrow column (beside the charts): Previous / Next side by side
above a round slider; the round restarts at 1 whenever the case or method changes."""
from __future__ import annotations

import streamlit as st

from studio.views.walkthrough_view import clamp_round
from studio.charts import HORIZONTAL_AT

__all__ = ["side_stepper", "preset_round", "chart_layout"]


def preset_round(context: object, number: int, *, key: str = "walk_round", seen_key: str = "walk_case_seen") -> None:
    """Open :func:`side_stepper` on round ``number`` of ``context`` (a deep link)."""
    st.session_state[seen_key] = context
    st.session_state[key] = int(number)


def side_stepper(context: object, last: int, *, key: str = "walk_round", seen_key: str = "walk_case_seen") -> int:
    """Previous / Next buttons and (for more than one round) a slider over rounds 1..last,
    laid out for a column; returns the chosen round."""
    state = st.session_state
    if state.get(seen_key) != context:
        state[seen_key] = context
        state[key] = 1
    state[key] = clamp_round(state.get(key, 1), last)
    b1, b2 = st.columns(2)
    b1.button("◀ Previous", disabled=state[key] <= 1, width="stretch",
              on_click=lambda: state.update({key: state[key] - 1}))
    b2.button("Next ▶", disabled=state[key] >= last, width="stretch",
              on_click=lambda: state.update({key: state[key] + 1}))
    if last > 1:
        st.slider("Round", 1, last, key=key)
    return int(state[key])


def chart_layout(mediated: bool, n_labels: int) -> list[float]:
    """Column widths of the stepper row: stepper | energy | belief for a mediated round with
    few labels; stepper | one chart otherwise (the belief chart of many labels goes full width
    below, the agents' probabilities of an unmediated round beside the stepper)."""
    if mediated and n_labels < HORIZONTAL_AT:
        return [1.4, 2.0, 2.0]
    return [1.4, 3.6]
