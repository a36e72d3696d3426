"""Session state of the what-if page's settings: slider ranges, a reset when another run
is picked, and applying a saved preset to the widgets."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import streamlit as st

from dcem.core.config import MediatorConfig
from dcem.core.vocabulary import STEER_GATES

__all__ = ["SLIDER_FIELDS", "slider_bounds", "reset_for_run", "seed_defaults", "apply_preset"]

# field -> (low, high, step); high grows with the run's own value (an LLM run's fitted
# energies can exceed the synthetic ranges)
_RANGES: dict[str, tuple[float, float, float]] = {
    "eps_safe": (0.0, 10.0, 0.05), "eps_low": (0.0, 10.0, 0.05), "m_safe": (0.0, 3.0, 0.01),
    "delta": (-1.0, 2.0, 0.01), "s_asym": (0.0, 5.0, 0.05), "alpha": (0.0, 3.0, 0.05),
    "beta": (0.0, 3.0, 0.05), "gamma": (0.0, 3.0, 0.05), "lambda_pool": (0.0, 5.0, 0.1),
    "rho_min": (0.001, 0.5, 0.001), "omega_min": (0.0, 0.5, 0.01),
}
SLIDER_FIELDS = tuple(_RANGES)
_STATE_KEYS = tuple(f"wi_{f}" for f in SLIDER_FIELDS) + (
    "wi_window", "wi_t_max", "wi_steer_gate", "wi_loss", "wi_loss_editor", "wi_high", "wi_lhigh", "wi_percell")


def slider_bounds(field: str, start: float) -> tuple[float, float, float]:
    """(low, high, step) of a parameter's slider, wide enough for the run's own value."""
    low, high, step = _RANGES[field]
    if math.isfinite(start) and start > high:
        high = float(math.ceil(start * 2.0))
    return low, high, step


def reset_for_run(run_id: str) -> None:
    """Forget the settings chosen for another run (they may not fit this run's labels,
    rounds or fitted thresholds); the widgets then start from this run's values."""
    if st.session_state.get("wi_for_run") != run_id:
        for key in _STATE_KEYS:
            st.session_state.pop(key, None)
        st.session_state["wi_for_run"] = run_id


def seed_defaults(start: MediatorConfig, max_rounds: int) -> None:
    """Start every settings widget at the run's own value unless the session holds one
    (the widgets are then created without a default, so a preset can set them)."""
    for field in SLIDER_FIELDS:
        low, high, _ = slider_bounds(field, float(getattr(start, field)))
        st.session_state.setdefault(f"wi_{field}", min(max(float(getattr(start, field)), low), high))
    st.session_state.setdefault("wi_window", min(max(int(start.window), 1), 6))
    st.session_state.setdefault("wi_t_max", min(max(int(start.t_max), 1), max(max_rounds, 1)))
    st.session_state.setdefault("wi_steer_gate", start.steer_gate if start.steer_gate in STEER_GATES else "risk")


def apply_preset(cfg: MediatorConfig, loss: np.ndarray | None, preset_labels: Sequence[str] | None,
                 labels: Sequence[str], start: MediatorConfig, max_rounds: int) -> list[str]:
    """Put a preset's values into the widgets' state; returns notes on what was not applied
    (values clipped to a slider's range, a loss matrix for other labels)."""
    notes = []
    for field in SLIDER_FIELDS:
        low, high, _ = slider_bounds(field, float(getattr(start, field)))
        value = float(getattr(cfg, field))
        if not low <= value <= high:
            notes.append(f"{field} = {value:g} is outside the slider's range and was clipped")
        st.session_state[f"wi_{field}"] = min(max(value, low), high)
    st.session_state["wi_window"] = min(max(int(cfg.window), 1), 6)
    st.session_state["wi_t_max"] = min(max(int(cfg.t_max), 1), max_rounds)
    st.session_state["wi_steer_gate"] = cfg.steer_gate
    if loss is not None:
        same = preset_labels is None or list(preset_labels) == list(labels)
        if loss.shape == (len(labels), len(labels)) and same:
            st.session_state["wi_loss"] = loss
            st.session_state.pop("wi_loss_editor", None)
        else:
            shown = ", ".join(preset_labels) if preset_labels is not None else f"{loss.shape[0]} labels"
            notes.append(f"the preset's loss matrix is for other labels ({shown}); the current loss is kept")
    return notes
