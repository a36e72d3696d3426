"""Session state of the what-if page's settings: slider ranges, the run's own settings as
the widgets' start, a reset to them (when another run is picked, or on request), and
applying a saved preset to the widgets.

The loss-matrix editor keeps the cells typed into it in the browser for as long as its
widget key stays the same (Streamlit ties a keyed table editor with fixed rows to its key
and columns, not to its data), so forgetting its state on the server is not enough: a
reset, a preset or a change of the high-risk fields gives it a new key
(:func:`renew_loss_editor`), and the browser drops the old cells."""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import streamlit as st

from dcem.core.config import MediatorConfig
from common.loss import three_level_form
from studio.memo import forget_valid
from studio.views.loss_input import format_loss_cell
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
           "seed_defaults", "apply_preset", "loss_editor_key", "renew_loss_editor"]

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
    keys.WI_WINDOW, keys.WI_T_MAX, keys.WI_STEER_GATE, keys.WI_LOSS, keys.WI_HIGH, keys.WI_LHIGH, keys.WI_LHIGH_VALUE,
    keys.WI_LHIGH_NOTE, keys.WI_CALIB, keys.WI_REFIT, keys.WI_SWEEP_PARAM)


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


def loss_editor_key() -> str:
    """The loss editor's current widget key."""
    return f"{keys.WI_LOSS_EDITOR}_{int(st.session_state.get(keys.WI_LOSS_EDITOR_VERSION, 0))}"


def renew_loss_editor() -> None:
    """Give the loss editor a new key (never one used before), so the browser drops the
    cells typed into the old one and the editor shows ``st.session_state[keys.WI_LOSS]``."""
    state = st.session_state
    state.pop(loss_editor_key(), None)
    state[keys.WI_LOSS_EDITOR_VERSION] = int(state.get(keys.WI_LOSS_EDITOR_VERSION, 0)) + 1


def _clear() -> None:
    for key in _STATE_KEYS:
        st.session_state.pop(key, None)
    renew_loss_editor()


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
                  high_risk: Sequence[str], labels: Sequence[str]) -> None:
    """Start every settings widget at the run's own value unless the session holds one
    (the widgets are then created without a default, so a preset or a reset can set them).
    ``reference`` is :func:`dcem.analysis.whatif_controls.run_settings`; the high-risk
    fields start at the matrix's three-level form (the run's ``high_risk`` classes at
    l_high = 1 when it has none)."""
    state = st.session_state
    for field in SLIDER_FIELDS:
        state.setdefault(f"wi_{field}", float(reference[field]))
    state.setdefault("wi_window", int(reference["window"]))
    state.setdefault("wi_t_max", int(reference["t_max"]))
    state.setdefault("wi_steer_gate", str(reference["steer_gate"]))
    if keys.WI_LOSS not in state:
        state[keys.WI_LOSS] = np.array(loss, dtype=float)
    if keys.WI_LHIGH_VALUE not in state:  # the matrix's own form, else the run's high-risk classes at 1
        form = three_level_form(np.asarray(loss, dtype=float))
        high, l_high = (form[0], form[1]) if form is not None and form[0] else (None, None)
        state[keys.WI_HIGH] = list(high_risk) if high is None else [labels[y] for y in high]
        state[keys.WI_LHIGH_VALUE] = 1.0 if l_high is None else float(l_high)
        state[keys.WI_LHIGH] = format_loss_cell(state[keys.WI_LHIGH_VALUE])


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
            renew_loss_editor()
        else:
            shown = ", ".join(preset_labels) if preset_labels is not None else f"{loss.shape[0]} labels"
            notes.append(f"the preset's loss matrix is for other labels ({shown}); the current loss is kept")
    return notes
