"""The dashboard's escalation cost: what the risk with escalation charges an escalated case.

System risk counts an escalated case as 0 (a person takes it over); beside it the pages
show the same risk with each escalation charged this cost
(:mod:`dcem.analysis.charged_risk`).  One value per session, kept under
``st.session_state[keys.ESCALATION_COST]``: set on the Overview or the Experiments page,
read everywhere with :func:`escalation_cost` (0.5, the cost eq. 1's fit uses, until set).
"""
from __future__ import annotations

from typing import Any

import streamlit as st

from dcem.analysis.charged_risk import DEFAULT_COST, MAX_COST, check_escalation_cost
from studio.views import session_keys as keys

__all__ = ["escalation_cost", "escalation_cost_setting"]


def escalation_cost() -> float:
    """The session's escalation cost (the default when it was never set)."""
    stored = st.session_state.get(keys.ESCALATION_COST)
    return DEFAULT_COST if stored is None else float(stored)


def escalation_cost_setting(key: str, where: Any = st) -> float:
    """A number input for the cost (``where``: ``st`` or a column); the value is kept for
    every page of the session and returned."""
    chosen = where.number_input(
        "Cost of an escalation", min_value=0.0, max_value=MAX_COST, value=escalation_cost(), step=0.1, key=key,
        help="The risk with escalation counts each escalated case at this cost, in the loss's units (an ordinary "
             f"error costs 1); system risk counts it 0. The default {DEFAULT_COST:g} is the cost the thresholds "
             "are fitted with.")
    st.session_state[keys.ESCALATION_COST] = check_escalation_cost(float(chosen))
    return float(st.session_state[keys.ESCALATION_COST])
