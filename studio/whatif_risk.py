"""The what-if page's section "Thresholds with a guarantee (Learn-then-Test)": pick the
rate, its bound and the chance the bound fails, see each cell's choice on half its cases
and the rate on the other half, and one cell's settings on the trade-off chart."""
from __future__ import annotations

import streamlit as st

from common.errors import ProjectError
from studio.views.glossary import term_help
from dcem.analysis.run_replay import RunReplay
from dcem.analysis.whatif_risk import risk_control_cells
from studio.literal import literal
from studio.risk_charts import risk_region_figure
from studio.risk_inputs import RiskKeys, risk_target_inputs
from studio.views import session_keys as keys
from studio.views.risk_view import (RISK_TABLE_COLUMNS, RISK_WORDS, cell_curve, cell_label, is_share, risk_statement,
                                    risk_summary, risk_table)

__all__ = ["risk_section"]


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
    target = risk_target_inputs(RiskKeys(keys.WI_RISK, keys.WI_RISK_ALPHA, keys.WI_RISK_DELTA, keys.WI_RISK_FWER))
    if target is None:
        return
    try:
        cells = risk_control_cells(replay, target)
    except ProjectError as exc:
        st.error(f"This run cannot be tested: {literal(exc)}")
        return
    st.info(risk_summary(cells, target))
    config = {name: st.column_config.TextColumn(title, help=tip) for name, (title, tip) in RISK_TABLE_COLUMNS.items()}
    st.dataframe(risk_table(cells), hide_index=True, column_config=config, key="wi_risk_table")
    labels = [cell_label(c) for c in cells]
    pick = st.selectbox("Cell on the chart", labels, key=keys.WI_RISK_CELL)
    cell = cells[labels.index(pick)]
    st.plotly_chart(risk_region_figure(cell_curve(cell), target.alpha, RISK_WORDS[target.risk],
                                       share=is_share(target.risk)), key="wi_risk_chart")
    st.caption(risk_statement(cell) + " The promise is about the share over many new cases; it "
               "says nothing about one case, and nothing when the cases, the agents or their prompts change.")
