"""The what-if page's word on thresholds after a loss change, and its offer to refit them.

A changed loss moves every energy while the run's thresholds stay those eq. (1) chose
under the run's own loss; the page says so under the loss, and offers thresholds refitted
for the new loss (:func:`dcem.analysis.whatif_refit.refit_thresholds`, on half of each
cell's stored cases: the store keeps no CAL trajectories), with both sets of thresholds
measured on the other half.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import streamlit as st

from common.errors import ProjectError
from dcem.analysis.run_replay import RunReplay
from dcem.analysis.run_scoring import THRESHOLD_FIELDS
from dcem.analysis.whatif_refit import FitCosts, Refit, stored_fit_costs
from dcem.calibration.fitting import C_ESC, C_ROUND
from dcem.store.database import Store
from studio.literal import literal
from studio.memo import refit_for
from studio.views import session_keys as keys
from studio.views.loss_input import loss_change

__all__ = ["STALE_THRESHOLDS", "refit_choice", "refit_note"]

STALE_THRESHOLDS = ("The run's thresholds (eps_safe, eps_low, m_safe, delta) were fitted by eq. (1) under the run's "
                    "own loss matrix. The loss changes the scale of every energy, so they are not the thresholds "
                    "eq. (1) would choose for this loss, and the outcomes below use thresholds fitted for another "
                    "loss: a higher l_high can push most cases above eps_low and escalate them.")
_TOGGLE = "Refit the thresholds for this loss"
_TOGGLE_HELP = ("Each cell's thresholds are fitted again by eq. (1) under the loss above, on a random half of the "
                "cell's stored cases; the other half is held out to compare them with the run's thresholds.")


def _costs(db: Store, run_id: str) -> Mapping[tuple[str, int], FitCosts]:
    return stored_fit_costs(db, run_id)


def _pct(value: float) -> str:
    return f"{value:.1%}"


def refit_note(refit: Refit, changes: Mapping[str, Any]) -> str:
    """What was refitted, on which cases, and both sets of thresholds on the held-out halves."""
    own, new = refit.held_own, refit.held_refit
    n_fit = sum(c.n_fit for c in refit.cells)
    parts = [f"Thresholds refitted by eq. (1) under this loss, cell by cell, on half of each cell's stored cases "
             f"({n_fit} cases in all). The store keeps only TEST trajectories (a cell stores its CAL counts, not the "
             "CAL cases' reports), so the refit cannot use the CAL cases the run was fitted on.",
             f"On the other half ({refit.n_held} held-out cases): escalated {_pct(own['escalation_rate'])} with the "
             f"run's thresholds, {_pct(new['escalation_rate'])} refitted; harmful consensus "
             f"{_pct(own['harmful_consensus'])} and {_pct(new['harmful_consensus'])}; system risk "
             f"{own['system_risk']:.3f} and {new['system_risk']:.3f}."]
    before, after = refit.objective(own), refit.objective(new)
    if before is not None and after is not None and refit.costs is not None:
        parts.append(f"Eq. (1)'s cost there ({refit.costs.c_esc:g} per escalation, {refit.costs.c_round:g} per "
                     f"round, plus the loss of each decided case): {before:.3f} with the run's thresholds, "
                     f"{after:.3f} refitted.")
    if refit.costs is None or not refit.costs.stored:
        parts.append(f"Some cells' stored fit does not name its costs; those cells are refitted at {C_ESC:g} per "
                     f"escalation and {C_ROUND:g} per round.")
    parts.append("The metrics below count every case, the fitting halves included, so they flatter the refit; "
                 "the held-out numbers above do not.")
    moved = [name for name in THRESHOLD_FIELDS if name in changes]
    if moved:
        parts.append(f"A threshold set on its slider ({', '.join(moved)}) still applies to every cell over the "
                     "refitted one.")
    return " ".join(parts)


def refit_choice(db: Store, replay: RunReplay, loss: np.ndarray | None, refused: Exception | None,
                 changes: Mapping[str, Any]) -> RunReplay:
    """The replay to re-score: ``replay``, or (after a loss change, toggle on) the run with
    thresholds refitted for the new loss.  Says that the run's thresholds were fitted
    under its own loss whenever the loss differs from the run's."""
    if refused is not None or loss is None or loss_change(loss, replay.cells[0].panel.loss) is None:
        st.session_state.pop(keys.WI_REFIT, None)  # a new loss change starts from the run's thresholds
        return replay
    st.warning(STALE_THRESHOLDS)
    if not st.toggle(_TOGGLE, key=keys.WI_REFIT, help=_TOGGLE_HELP):
        return replay
    try:
        with st.spinner("Refitting each cell's thresholds for this loss ..."):
            refit = refit_for(replay, np.asarray(loss, dtype=float), changes, _costs(db, replay.run_id))
    except ProjectError as exc:
        st.error(f"The thresholds cannot be refitted for this loss: {literal(exc)}")
        return replay
    st.info(refit_note(refit, changes))
    return refit.replay
