"""The what-if page's section "Thresholds with a guarantee (Learn-then-Test)": pick the
rate, alpha and delta, see each cell's choice on half its cases and the rate on the
other half, and one cell's settings on the trade-off chart."""
from __future__ import annotations

import streamlit as st

from common.errors import ProjectError
from dcem.analysis.glossary import term_help
from dcem.analysis.run_replay import RunReplay
from dcem.analysis.whatif_risk import risk_control_cells
from dcem.calibration.risk_control import CONDITIONAL_RISKS, FWER_METHODS, RISKS, RiskTarget
from studio.literal import literal
from studio.risk_charts import risk_region_figure
from studio.views import session_keys as keys
from studio.views.risk_view import RISK_WORDS, cell_curve, cell_label, risk_summary, risk_table

__all__ = ["risk_section"]


def _target() -> RiskTarget | None:
    a, b, c, d = st.columns(4)
    risk = a.selectbox("Controlled rate", RISKS, key=keys.WI_RISK, format_func=RISK_WORDS.get)
    alpha = b.number_input("alpha (the bound)", min_value=0.001, max_value=0.999, value=0.1, step=0.01,
                           format="%.3f", key=keys.WI_RISK_ALPHA)
    delta = c.number_input("delta (chance the bound fails)", min_value=0.001, max_value=0.999, value=0.1,
                           step=0.01, format="%.3f", key=keys.WI_RISK_DELTA)
    conditional = risk in CONDITIONAL_RISKS
    fwer = d.radio("Multiple testing", FWER_METHODS, key=keys.WI_RISK_FWER, horizontal=True,
                   index=1 if conditional else 0, disabled=conditional,
                   help="fixed_sequence tests the energy levels from the strictest up and stops at the first "
                        "that fails; bonferroni tests each at delta / (number of levels). A rate among decided "
                        "cases takes bonferroni.")
    try:
        return RiskTarget(risk=risk, alpha=float(alpha), delta=float(delta),
                          fwer="bonferroni" if conditional else fwer)
    except ProjectError as exc:
        st.error(f"These settings cannot be tested: {literal(exc)}")
        return None


def risk_section(replay: RunReplay) -> None:
    """The section; computes only while its toggle is on."""
    st.subheader("Thresholds with a guarantee (Learn-then-Test)")
    st.caption(term_help("risk_control") or "")
    if replay.method != "dcem":
        st.info("Risk control chooses between deciding and escalating: pick the method D-CEM above.")
        return
    if not st.toggle("Check a guarantee on this run", key=keys.WI_RISK_ON,
                     help="Each cell's stored cases are split at random into halves: the level is chosen on "
                          "one half and measured on the other."):
        return
    target = _target()
    if target is None:
        return
    try:
        cells = risk_control_cells(replay, target)
    except ProjectError as exc:
        st.error(f"This run cannot be tested: {literal(exc)}")
        return
    st.info(risk_summary(cells, target))
    st.dataframe(risk_table(cells), hide_index=True)
    labels = [cell_label(c) for c in cells]
    pick = st.selectbox("Cell on the chart", labels, key=keys.WI_RISK_CELL)
    cell = cells[labels.index(pick)]
    st.plotly_chart(risk_region_figure(cell_curve(cell), target.alpha, RISK_WORDS[target.risk]),
                    key="wi_risk_chart")
    st.caption(cell.fit.report["statement"] + " The promise is about the share over many new cases; it "
               "says nothing about one case, and nothing when the cases, the agents or their prompts change.")
