"""Per-session memoisation of the what-if computations that do not change on every rerun.

Streamlit reruns the whole page on each widget change; these helpers keep, in the
session, the run's trajectories, its results under the original settings, the trade-off
sweep (which only depends on the settings other than the swept parameter), the run
re-scored with a loaded calibration set's panels, its thresholds refitted for a changed
loss (one at a time), and the last valid settings with their
result (shown, greyed, while an input is refused).  Results memoised for a replay are
tied to that replay object, so the run's own replay and one with a calibration set's
panels (:func:`calibrated_for`) never share them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import streamlit as st

from dcem.analysis.whatif import RunReplay, WhatIfResult, baseline_metrics, load_run_replay, rescore, sweep
from dcem.analysis.whatif_calibration import own_replay, with_calibration
from dcem.analysis.whatif_refit import FitCosts, Refit, refit_thresholds
from dcem.calibration.sets import CalibrationSet
from dcem.store.database import Store
from studio.views.session_keys import MEMO_SLOTS as _SLOTS

__all__ = ["ValidSettings", "replay_for", "calibrated_for", "original_for", "sweep_for",
           "remember_valid", "last_valid", "forget_valid", "refit_for"]


def _memo() -> dict[str, Any]:
    if _SLOTS not in st.session_state:
        st.session_state[_SLOTS] = {}
    return st.session_state[_SLOTS]


def replay_for(db: Store, run_id: str, method: str) -> RunReplay:
    memo = _memo()
    key = f"replay::{run_id}::{method}"
    if key not in memo:
        memo[key] = load_run_replay(db, run_id, method)
    return memo[key]


def calibrated_for(replay: RunReplay, calib: CalibrationSet) -> RunReplay:
    """:func:`dcem.analysis.whatif_calibration.with_calibration` of the run's own replay and
    ``calib``, kept (one at a time) while the same replay and set objects are asked for."""
    memo = _memo()
    own = own_replay(replay)
    held = memo.get("calibrated")
    if not (isinstance(held, tuple) and held[0] is own and held[1] is calib):
        held = memo["calibrated"] = (own, calib, with_calibration(own, calib))
    return held[2]


def original_for(replay: RunReplay) -> tuple[WhatIfResult, dict[str, float]]:
    """The run re-scored under each cell's original settings and its own calibration (for
    a calibrated replay: the run it came from), and its pooled metrics."""
    memo = _memo()
    own = own_replay(replay)
    key = f"original::{own.run_id}::{own.method}"
    if key not in memo:
        memo[key] = (rescore(own), baseline_metrics(own))
    return memo[key]


@dataclass(frozen=True, eq=False)
class ValidSettings:
    """Settings the run was last re-scored under without error: the changes (parameters
    set in every cell), the loss replacing every cell's (None: each cell's own), the
    values on the sliders, and the result."""

    changes: dict[str, Any]
    loss: np.ndarray | None
    values: dict[str, Any]
    result: WhatIfResult


def _valid_key(replay: RunReplay) -> str:
    return f"valid::{replay.run_id}::{replay.method}"


def remember_valid(replay: RunReplay, settings: ValidSettings) -> ValidSettings:
    _memo()[_valid_key(replay)] = (replay, settings)
    return settings


def last_valid(replay: RunReplay) -> ValidSettings | None:
    """The last settings of this replay (run, method and calibration) that were re-scored
    without error."""
    found = _memo().get(_valid_key(replay))
    if isinstance(found, tuple) and found[0] is replay and isinstance(found[1], ValidSettings):
        return found[1]
    return None


def forget_valid() -> None:
    memo = _memo()
    for key in [k for k in memo if k.startswith("valid::")]:
        del memo[key]


def sweep_for(replay: RunReplay, parameter: str, changes: Mapping[str, Any], loss: np.ndarray | None,
              values: Sequence[float]) -> Any:
    """:func:`dcem.analysis.whatif.sweep` with ``changes`` (the swept parameter set in every
    cell, the other unchanged parameters per cell), recomputed only when something other
    than the swept parameter (or the grid) changed."""
    memo = _memo()
    others = {k: v for k, v in changes.items() if k != parameter}
    key = "sweep::" + json.dumps([replay.run_id, replay.method, parameter, others,
                                  None if loss is None else np.asarray(loss).tolist(),
                                  [float(v) for v in values]], sort_keys=True, default=str)
    if memo.get("sweep_key") != key or memo.get("sweep_replay") is not replay:
        memo["sweep_key"], memo["sweep_replay"] = key, replay
        memo["sweep"] = sweep(replay, parameter=parameter, values=values, changes=others, loss=loss)
    return memo["sweep"]


def refit_for(replay: RunReplay, loss: np.ndarray, changes: Mapping[str, Any],
              costs: Mapping[tuple[str, int], FitCosts]) -> Refit:
    """:func:`dcem.analysis.whatif_refit.refit_thresholds`, kept (one at a time) while the
    replay object, the loss and the settings other than the thresholds stay the same."""
    memo = _memo()
    key = json.dumps([np.asarray(loss).tolist(), dict(changes)], sort_keys=True, default=str)
    held = memo.get("refit")
    if not (isinstance(held, tuple) and held[0] is replay and held[1] == key):
        held = memo["refit"] = (replay, key, refit_thresholds(replay, loss, changes, costs=costs))
    return held[2]
