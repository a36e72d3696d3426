"""The inputs of a Learn-then-Test target (rate, alpha, delta, multiple testing), shared by
the what-if page's guarantee check and the Experiments page's threshold choice."""
from __future__ import annotations

from typing import NamedTuple

import streamlit as st

from common.errors import ProjectError
from dcem.calibration.risk_control import CONDITIONAL_RISKS, FWER_METHODS, RISKS, RiskTarget
from studio.literal import literal
from studio.views.risk_view import RISK_WORDS

__all__ = ["RiskKeys", "risk_target_inputs"]


class RiskKeys(NamedTuple):
    """The widget keys of one page's target inputs."""

    risk: str
    alpha: str
    delta: str
    fwer: str


def risk_target_inputs(keys: RiskKeys, *, alpha: float = 0.1) -> RiskTarget | None:
    """Four inputs in a row; the target, or None (with the reason shown) when refused."""
    a, b, c, d = st.columns(4)
    risk = a.selectbox("Controlled rate", RISKS, key=keys.risk, format_func=RISK_WORDS.get)
    bound = b.number_input("alpha (the bound)", min_value=0.001, max_value=0.999, value=alpha, step=0.01,
                           format="%.3f", key=keys.alpha)
    delta = c.number_input("delta (chance the bound fails)", min_value=0.001, max_value=0.999, value=0.1,
                           step=0.01, format="%.3f", key=keys.delta)
    conditional = risk in CONDITIONAL_RISKS
    fwer = d.radio("Multiple testing", FWER_METHODS, key=keys.fwer, horizontal=True,
                   index=1 if conditional else 0, disabled=conditional,
                   help="fixed_sequence tests the energy levels from the strictest up and stops at the first "
                        "that fails; bonferroni tests each at delta / (number of levels). A rate among decided "
                        "cases takes bonferroni.")
    try:
        return RiskTarget(risk=risk, alpha=float(bound), delta=float(delta),
                          fwer="bonferroni" if conditional else fwer)
    except ProjectError as exc:
        st.error(f"These settings cannot be tested: {literal(exc)}")
        return None
