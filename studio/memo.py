"""Per-session memoisation of the what-if computations that do not change on every rerun.

Streamlit reruns the whole page on each widget change; these helpers keep, in the
session, the run's trajectories, its results under the original settings and the
trade-off sweep (which only depends on the settings other than the swept parameter).
"""
from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np
import streamlit as st

from dcem.core.config import MediatorConfig
from dcem.store.database import Store
from dcem.analysis.whatif import RunReplay, WhatIfResult, baseline_metrics, load_run_replay, rescore, sweep

__all__ = ["replay_for", "original_for", "sweep_for", "sweep_values"]

_SLOTS = "_memo"


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


def original_for(replay: RunReplay) -> tuple[WhatIfResult, dict[str, float]]:
    """The run re-scored under each cell's original settings, and its pooled metrics."""
    memo = _memo()
    key = f"original::{replay.run_id}::{replay.method}"
    if key not in memo:
        memo[key] = (rescore(replay), baseline_metrics(replay))
    return memo[key]


def sweep_values(parameter: str, current: float) -> np.ndarray:
    """Twenty values around the current one (integers 1..12 for window / t_max)."""
    if parameter in ("window", "t_max"):
        return np.arange(1, 13)
    return np.linspace(max(current * 0.25, 0.0), current * 2.0 + 0.1, 20)


def sweep_for(replay: RunReplay, parameter: str, config: MediatorConfig, loss: np.ndarray,
              values: Sequence[float]) -> Any:
    """:func:`dcem.analysis.whatif.sweep`, recomputed only when something other than the swept
    parameter (or the grid) changed."""
    memo = _memo()
    others = {k: v for k, v in config.to_dict().items() if k != parameter}
    key = "sweep::" + json.dumps([replay.run_id, replay.method, parameter, others, np.asarray(loss).tolist(),
                                  [float(v) for v in values]], sort_keys=True)
    if memo.get("sweep_key") != key:
        memo["sweep_key"] = key
        memo["sweep"] = sweep(replay, parameter=parameter, values=values, config=config, loss=loss)
    return memo["sweep"]
