"""Session state of the what-if page's settings: slider ranges, the run's own settings as
the widgets' start, a reset to them (when another run is picked, or on request), and
applying a saved preset to the widgets."""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import streamlit as st

from dcem.core.config import MediatorConfig
from studio.memo import forget_valid
from dcem.analysis.whatif_controls import (
    inert_parameters,
    losses_differ,
    parameter_notes,
    per_cell_values,
    run_settings,
    scope_note,
    settings_changes,
)
# names its page imports from here (pages import from studio only)
from dcem.core.vocabulary import mediated_methods
from dcem.store.presets import list_presets, load_preset, save_preset
from studio.views import session_keys as keys

__all__ = ["SLIDER_FIELDS", "slider_bounds", "window_top", "t_max_top", "reset_for_run", "reset_to_run_settings",
           "seed_defaults", "apply_preset"]

# field -> (low, high, step); the range grows to hold the run's own value (an LLM run's
# fitted energies can exceed the synthetic ranges)
_RANGES: dict[str, tuple[float, float, float]] = {
    "eps_safe": (0.0, 10.0, 0.05), "eps_low": (0.0, 10.0, 0.05), "m_safe": (0.0, 3.0, 0.01),
    "delta": (-1.0, 2.0, 0.01), "s_asym": (0.0, 5.0, 0.05), "alpha": (0.0, 3.0, 0.05),
    "beta": (0.0, 3.0, 0.05), "gamma": (0.0, 3.0, 0.05), "lambda_pool": (0.0, 5.0, 0.1),
    "rho_min": (0.001, 0.5, 0.001), "omega_min": (0.0, 0.5, 0.01),
}
SLIDER_FIELDS = tuple(_RANGES)
_WINDOW_TOP = 6
_STATE_KEYS = tuple(f"wi_{f}" for f in SLIDER_FIELDS) + (
    "wi_window", "wi_t_max", "wi_steer_gate", "wi_loss", "wi_loss_editor", "wi_high", "wi_lhigh", "wi_calib",
    "wi_sweep_param")


def slider_bounds(field: str, start: float) -> tuple[float, float, float]:
    """(low, high, step) of a parameter's slider, wide enough to hold the run's own value
    exactly (so the slider can start on it)."""
    low, high, step = _RANGES[field]
    if math.isfinite(start) and start > high:
        high = float(math.ceil(start * 2.0))
    if math.isfinite(start) and start < low:
        low = float(math.floor(start))
    return low, high, step


def window_top(start: int) -> int:
    """Largest window W the slider offers (at least the run's own)."""
    return max(_WINDOW_TOP, int(start))


def t_max_top(start: int, max_rounds: int) -> int:
    """Largest round budget the slider offers: the stored rounds (at least the run's own
    t_max; a larger budget only leaves cases without an outcome in a replay)."""
    return max(int(max_rounds), int(start), 1)


def _clear() -> None:
    for key in _STATE_KEYS:
        st.session_state.pop(key, None)


def reset_for_run(run_id: str) -> None:
    """Forget the settings chosen for another run (they may not fit this run's labels,
    rounds or fitted thresholds); the widgets then start from this run's values."""
    if st.session_state.get(keys.WI_FOR_RUN) != run_id:
        _clear()
        forget_valid()
        st.session_state[keys.WI_FOR_RUN] = run_id


def reset_to_run_settings() -> None:
    """The "Reset to run settings" button's callback: every setting widget and the loss
    matrix go back to the run's own values (seeded again by :func:`seed_defaults`), and
    the calibration-set toggle goes off (the run's own calibration)."""
    _clear()
    st.session_state[keys.WI_RESET_NOTE] = True


def seed_defaults(reference: Mapping[str, Any], max_rounds: int, loss: np.ndarray,
                  high_risk: Sequence[str]) -> None:
    """Start every settings widget at the run's own value unless the session holds one
    (the widgets are then created without a default, so a preset or a reset can set them).
    ``reference`` is :func:`dcem.analysis.whatif_controls.run_settings`."""
    state = st.session_state
    for field in SLIDER_FIELDS:
        state.setdefault(f"wi_{field}", float(reference[field]))
    state.setdefault("wi_window", int(reference["window"]))
    state.setdefault("wi_t_max", int(reference["t_max"]))
    state.setdefault("wi_steer_gate", str(reference["steer_gate"]))
    if "wi_loss" not in state:
        state["wi_loss"] = np.array(loss, dtype=float)
    state.setdefault("wi_high", list(high_risk))
    state.setdefault("wi_lhigh", 1.0)  # the loss section shows the matrix's own l_high


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
    st.session_state[keys.WI_WINDOW] = min(max(int(cfg.window), 1), window_top(start.window))
    st.session_state[keys.WI_T_MAX] = min(max(int(cfg.t_max), 1), t_max_top(start.t_max, max_rounds))
    st.session_state[keys.WI_STEER_GATE] = cfg.steer_gate
    if loss is not None:
        same = preset_labels is None or list(preset_labels) == list(labels)
        if loss.shape == (len(labels), len(labels)) and same:
            st.session_state[keys.WI_LOSS] = loss
            st.session_state.pop(keys.WI_LOSS_EDITOR, None)
        else:
            shown = ", ".join(preset_labels) if preset_labels is not None else f"{loss.shape[0]} labels"
            notes.append(f"the preset's loss matrix is for other labels ({shown}); the current loss is kept")
    return notes
