"""The Calibration sets page's typed numbers and the matrices they drive.

The synthetic scenario's Seed and the Smoothing alpha are typed as text and read strictly
(:mod:`dcem.analysis.form_input`), because a browser's number box silently replaces an
invalid entry with another value.  An invalid seed keeps "Load synthetic set" disabled; an
invalid alpha shows its message and hides the matrices, recall and prior (which would
otherwise be computed with a value the field does not show) until it is fixed.  The agent
choice and the prior choice stay on the page meanwhile, so fixing alpha keeps them.
"""
from __future__ import annotations

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from studio.views.calibration_view import (ALPHA_MAX, ALPHA_MIN, MAX_SHOWN_AGENTS, CalibrationView,
                                            calibration_view, prior_table, shown_agents)
from dcem.analysis.form_input import FloatField, IntField, parse_float_field, parse_int_field
from dcem.calibration.sets import CalibrationSet
from common.errors import ProjectError
from studio.charts import confusion_figure, recall_figure
from studio.literal import literal

__all__ = ["SEED_RANGE", "ALPHA_HIDDEN", "seed_field", "alpha_field", "show_matrices"]

SEED_RANGE = (0, 10_000)
ALPHA_HIDDEN = ("The matrices, recall and prior are hidden until Smoothing alpha is valid: they are only "
                "drawn with the value the field shows.")
_ALPHA_HELP = "Diagonal-biased Laplace smoothing: C[i,j] = (n_ij + alpha(1+[i=j])) / (n_i + alpha(K+1))."


def seed_field(column: DeltaGenerator) -> IntField:
    """The synthetic scenario's Seed, typed in ``column`` and read strictly (message under it)."""
    text = column.text_input(f"Seed ({SEED_RANGE[0]} to {SEED_RANGE[1]})", "0", key="calib_seed")
    read = parse_int_field(text, field="Seed", low=SEED_RANGE[0], high=SEED_RANGE[1])
    if read.error:
        column.error(read.error)
    return read


def alpha_field() -> FloatField:
    """Smoothing alpha, typed as a decimal number and read strictly (message under it)."""
    text = st.text_input(f"Smoothing alpha ({ALPHA_MIN:g} to {ALPHA_MAX:g})", "0.5", key="calib_alpha",
                         help=_ALPHA_HELP + " Type a decimal number with a point, e.g. 0.5.")
    read = parse_float_field(text, field="Smoothing alpha", low=ALPHA_MIN, high=ALPHA_MAX)
    if read.error:
        st.error(read.error)
        st.info(ALPHA_HIDDEN)
    return read


def _view(calib: CalibrationSet, alpha: float | None) -> CalibrationView | None:
    if alpha is None:
        return None
    try:
        return calibration_view(calib, alpha)
    except ProjectError as exc:
        st.error(f"The calibration set cannot be shown: {literal(exc)}")
        st.stop()
    return None  # not reached: st.stop() ends the page run


def _picked_agents(calib: CalibrationSet) -> list[int]:
    picked = None
    if calib.n_agents > MAX_SHOWN_AGENTS:
        picked = st.multiselect(f"Agents shown (at most {MAX_SHOWN_AGENTS} of {calib.n_agents})", calib.agents,
                                default=list(calib.agents[:MAX_SHOWN_AGENTS]), max_selections=MAX_SHOWN_AGENTS,
                                key=f"calib_agents_{hash(calib.agents)}")
    return shown_agents(calib, picked)


def show_matrices(calib: CalibrationSet, alpha: FloatField) -> None:
    """The confusion heatmaps, recall bars and prior table of ``calib`` smoothed with the
    typed alpha; with an invalid alpha, only the agent and prior choices (nothing computed)."""
    view = _view(calib, alpha.value)
    shown = _picked_agents(calib)
    if view is not None:
        for a, col in zip(shown, st.columns(len(shown))):
            col.plotly_chart(confusion_figure(view.smoothed[a], calib.labels, view.matrix_title(calib.agents[a]),
                                              counts=None if view.estimated else view.counts[a]),
                             key=f"calib_conf_{a}")
        st.plotly_chart(recall_figure(view.recall[shown], calib.labels, [calib.agents[a] for a in shown],
                                      view.recall_title), key="calib_recall")
    prior_mode = st.radio("Prior", ["uniform", "empirical"], horizontal=True, key="calib_prior")
    if alpha.value is None:
        return
    try:
        st.dataframe(prior_table(calib, prior_mode, alpha.value), hide_index=True)
    except ProjectError as exc:
        st.error(f"The prior cannot be shown: {literal(exc)}")
