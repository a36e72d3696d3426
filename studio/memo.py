"""Per-session memoisation of the what-if computations that do not change on every rerun.

Streamlit reruns the whole page on each widget change; these helpers keep, in the
session, the run's trajectories, its results under the original settings, the trade-off
sweep (which only depends on the settings other than the swept parameter) and the last
valid settings with their result (shown, greyed, while an input is refused).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import streamlit as st

from dcem.store.database import Store
from dcem.analysis.whatif import RunReplay, WhatIfResult, baseline_metrics, load_run_replay, rescore, sweep

__all__ = ["ValidSettings", "replay_for", "original_for", "sweep_for", "sweep_values", "remember_valid",
           "last_valid", "forget_valid"]

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
    _memo()[_valid_key(replay)] = settings
    return settings


def last_valid(replay: RunReplay) -> ValidSettings | None:
    """The last settings of this run and method that were re-scored without error."""
    found = _memo().get(_valid_key(replay))
    return found if isinstance(found, ValidSettings) else None


def forget_valid() -> None:
    memo = _memo()
    for key in [k for k in memo if k.startswith("valid::")]:
        del memo[key]


def sweep_values(parameter: str, current: float, max_rounds: int = 12) -> np.ndarray:
    """Twenty values around the current one; for t_max every stored round (1..max_rounds),
    for window 1..max_rounds (at least 1..2, at most 1..12)."""
    if parameter == "t_max":
        return np.arange(1, max(int(max_rounds), 1) + 1)
    if parameter == "window":
        return np.arange(1, min(max(int(max_rounds), 2), 12) + 1)
    return np.linspace(max(current * 0.25, 0.0), current * 2.0 + 0.1, 20)


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
    if memo.get("sweep_key") != key:
        memo["sweep_key"] = key
        memo["sweep"] = sweep(replay, parameter=parameter, values=values, changes=others, loss=loss)
    return memo["sweep"]
