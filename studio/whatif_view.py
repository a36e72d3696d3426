"""The what-if page's results: metrics against the run's own settings, the per-scenario
table, the outcome mix and the trade-off sweep -- current, or the last valid ones greyed
while an input is refused."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd
import streamlit as st

from dcem.analysis.glossary import metric_words, term_help
from dcem.analysis.loss_input import loss_change
from dcem.analysis.whatif import SWEEP_PARAMETERS, RunReplay, rescore
from dcem.analysis.whatif_controls import run_settings
from dcem.errors import DcemError
from studio.memo import ValidSettings, last_valid, original_for, remember_valid, sweep_for, sweep_values
from studio.tables import MISSING
from studio.whatif_charts import action_mix_figure, tradeoff_figure
from studio.whatif_inputs import refusal_text

__all__ = ["STALE_NOTE", "settle", "show_results"]

STALE_NOTE = ("Showing the last valid settings (greyed): the results below are from before the refused "
              "input. Fix it, or press \"Reset to run settings\", to update them.")
_GREY = "<style>.st-key-wi_results {opacity: 0.45; filter: grayscale(1);}</style>"
_HEADLINE = ("certified_rate", "decided_rate", "escalation_rate", "harmful_consensus", "system_risk")


def settle(replay: RunReplay, values: Mapping[str, Any], changes: Mapping[str, Any],
           loss: np.ndarray | None, refused: Exception | None) -> tuple[ValidSettings | None, bool]:
    """Re-score under the current settings and remember them as the last valid ones, or
    show why they are refused (``refused``: the loss table's refusal, already shown) and
    fall back to the last valid ones.  Returns ``(settings, stale)``."""
    if refused is None and loss is not None:
        try:
            kept = loss_change(loss, replay.cells[0].panel.loss)
            result = rescore(replay, changes=changes, loss=kept)
        except DcemError as exc:
            st.error(f"Settings refused. {refusal_text(exc)}")
        else:
            return remember_valid(replay, ValidSettings(dict(changes), kept, dict(values), result)), False
    return last_valid(replay), True


def _metrics(current: Mapping[str, float], original: Mapping[str, float], n_cases: int) -> None:
    st.subheader(f"Metrics over {n_cases} cases")
    for col, key in zip(st.columns(len(_HEADLINE)), _HEADLINE):
        change = f"{current[key] - original[key]:+.3f}"
        col.metric(metric_words(key), f"{current[key]:.3f}", f"{change} vs original", delta_color="off",
                   delta_arrow="off" if float(change) == 0.0 else "auto", help=term_help(key))
    frame = pd.DataFrame({"metric": {k: metric_words(k) for k in current}, "current": current,
                          "original settings": original})
    st.dataframe(frame.assign(change=frame["current"] - frame["original settings"]), placeholder=MISSING,
                 key="wi_metrics")


def _tradeoff(replay: RunReplay, valid: ValidSettings, inert: Mapping[str, str], col: Any) -> None:
    options = [p for p in SWEEP_PARAMETERS if p not in inert]
    parameter = col.selectbox("Sweep parameter", options, key="wi_sweep_param",
                              help="Each point re-scores the run with this parameter set to the point's value "
                                   "in every cell; the other settings stay as they are now.")
    current = float(valid.values[parameter])
    # the grid is centred on the run's own value, so moving the swept parameter reuses the curve
    grid = sweep_values(parameter, float(run_settings(replay)[parameter]), replay.max_rounds)
    curve = sweep_for(replay, parameter, valid.changes, valid.loss, grid)
    y = col.radio("Against", ["harmful_consensus", "system_risk"], horizontal=True, key="wi_sweep_y",
                  format_func=metric_words)
    _, original = original_for(replay)
    col.plotly_chart(tradeoff_figure(curve, parameter, current, valid.result.metrics, y, original),
                     key="wi_tradeoff")
    left_out = int((~curve["valid"]).sum())
    if left_out:
        col.caption(f"{left_out} of {len(curve)} values of {parameter} are left out: they make some cell's "
                    "settings invalid (for example eps_safe at or above that cell's eps_low).")


def show_results(replay: RunReplay, valid: ValidSettings, inert: Mapping[str, str], *, stale: bool) -> None:
    """Everything computed from ``valid``; greyed, under :data:`STALE_NOTE`, when ``stale``."""
    if stale:
        st.warning(STALE_NOTE)
        st.markdown(_GREY, unsafe_allow_html=True)
    before, original = original_for(replay)
    with st.container(key="wi_results"):
        _metrics(valid.result.metrics, original, replay.n_cases)
        st.dataframe(valid.result.per_scenario, placeholder=MISSING, hide_index=True)
        c1, c2 = st.columns(2)
        c1.plotly_chart(action_mix_figure(valid.result.outcome_mix, before.outcome_mix), key="wi_mix")
        _tradeoff(replay, valid, inert, c2)
