"""The inputs of a Learn-then-Test target (rate, its bound, the chance the bound fails,
multiple testing), shared by the what-if page's guarantee check and the Experiments page's
threshold choice.

The target's alpha and delta are shown as "Rate bound" and "Chance the bound fails": the
mediator's own alpha and delta (energy weight and required descent) sit on the same page.
A bound on a share of cases is typed in percent, as the page shows shares; a bound on the
system risk (a mean loss) as a number.
"""
from __future__ import annotations

from typing import NamedTuple

import streamlit as st

from common.errors import ProjectError
from dcem.calibration.risk_control import CONDITIONAL_RISKS, FWER_METHODS, RISKS, RiskTarget
from studio.literal import literal
from studio.views.risk_view import RISK_WORDS, is_share

__all__ = ["RiskKeys", "risk_target_inputs"]


class RiskKeys(NamedTuple):
    """The widget keys of one page's target inputs."""

    risk: str
    alpha: str
    delta: str
    fwer: str


def risk_target_inputs(keys: RiskKeys, *, alpha: float = 0.1) -> RiskTarget | None:
    """Four inputs in a row; the target, or None (with the reason shown) when refused.
    ``alpha`` is the bound the inputs start at (a share as a fraction)."""
    a, b, c, d = st.columns(4)
    risk = a.selectbox("Controlled rate", RISKS, key=keys.risk, format_func=RISK_WORDS.get)
    if is_share(risk):
        bound = b.number_input("Rate bound (% of cases)", min_value=0.1, max_value=99.9, value=alpha * 100.0,
                               step=0.5, format="%.1f", key=f"{keys.alpha}_pct",
                               help="The promised ceiling on the controlled share of cases (the command line's "
                                    "--alpha, there as a fraction).") / 100.0
    else:
        bound = b.number_input("Rate bound (mean loss)", min_value=0.001, max_value=0.999, value=alpha, step=0.01,
                               format="%.3f", key=keys.alpha,
                               help="The promised ceiling on the system risk, in the loss's units (the command "
                                    "line's --alpha).")
    fails = c.number_input("Chance the bound fails (%)", min_value=0.1, max_value=99.9, value=10.0, step=0.5,
                           format="%.1f", key=keys.delta,
                           help="How often, over the draw of the calibration cases, the promise may fail (the "
                                "command line's --delta, there as a fraction).")
    conditional = risk in CONDITIONAL_RISKS
    fwer = d.radio("Multiple testing", FWER_METHODS, key=keys.fwer, horizontal=True,
                   index=1 if conditional else 0, disabled=conditional,
                   help="fixed_sequence tests the energy levels from the strictest up and stops at the first "
                        "that fails; bonferroni tests each at the chance the bound fails divided by the number of "
                        "levels. A rate among decided cases takes bonferroni.")
    try:
        return RiskTarget(risk=risk, alpha=float(bound), delta=float(fails) / 100.0,
                          fwer="bonferroni" if conditional else fwer)
    except ProjectError as exc:
        st.error(f"These settings cannot be tested: {literal(exc)}")
        return None
