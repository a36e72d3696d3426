"""The what-if page's input widgets: the policy parameter sliders (disabled, with the
reason, when a replay cannot be moved by them; with the per-cell values when the run's
cells differ) and the loss matrix editor (text cells read strictly)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import streamlit as st

from common.loss import three_level_loss
from studio.views.glossary import PARAMETERS
from studio.views.loss_input import (format_loss_cell, l_high_refusal, loss_cells, parse_l_high, parse_loss_table,
                                     three_level_fields)
from dcem.core.vocabulary import STEER_GATES
from common.errors import InputError
from studio.whatif_settings import loss_editor_key, renew_loss_editor, slider_bounds, t_max_top, window_top
from studio.views import session_keys as keys

__all__ = ["parameter_widgets", "loss_editor", "loss_section", "refusal_text"]

_LAYOUT = (("eps_safe", "eps_low", "m_safe"), ("delta", "s_asym", "window", "t_max"), ("alpha", "beta", "gamma"))
_MORE = (("lambda_pool", "rho_min"), ("omega_min", "steer_gate"))


def _help(field: str, spread: Mapping[str, Mapping[str, Any]], inert: Mapping[str, str]) -> str:
    term = PARAMETERS.get(field)
    parts = [f"{term.words}: {term.help}" if term else field]
    if field in spread:
        cells = ", ".join(f"{name}: {value:.4g}" if isinstance(value, float) else f"{name}: {value}"
                          for name, value in spread[field].items())
        parts.append(f"Each cell has its own value ({cells}); the slider starts at the first cell's. "
                     "Moving it sets this value for every cell.")
    if field in inert:
        parts.append(f"Disabled: {inert[field]}")
    return "\n\n".join(parts)


def _widget(col: Any, field: str, reference: Mapping[str, Any], max_rounds: int,
            spread: Mapping[str, Mapping[str, Any]], inert: Mapping[str, str], notes: Mapping[str, str]) -> Any:
    off, tip, key = field in inert, _help(field, spread, inert), f"wi_{field}"
    if field == "steer_gate":
        value = col.selectbox("steer gate", STEER_GATES, key=key, disabled=off, help=tip)
    elif field == "window":
        value = col.slider("window W", 1, window_top(reference["window"]), key=key, disabled=off, help=tip)
    elif field == "t_max":
        top = t_max_top(reference["t_max"], max_rounds)
        if top <= 1:
            value = col.number_input("round budget t_max", 1, 1, key=key, disabled=True, help=tip)
        else:
            value = col.slider("round budget t_max", 1, top, key=key, disabled=off, help=tip)
    else:
        low, high, step = slider_bounds(field, float(reference[field]))
        value = col.slider(field, low, high, step=step, key=key, disabled=off, help=tip)
    if off:
        col.caption(f"Disabled: {inert[field]}")
    elif field in spread:
        col.caption(f"{field}: each cell's own value until you move it.")
    if field in notes:
        col.caption(notes[field])
    return value


def parameter_widgets(reference: Mapping[str, Any], max_rounds: int, spread: Mapping[str, Mapping[str, Any]],
                      inert: Mapping[str, str], notes: Mapping[str, str]) -> dict[str, Any]:
    """Every policy parameter's widget (in the session, seeded from the run's values):
    disabled with the reason for the ``inert`` ones, captioned for the per-cell ones
    (``spread``) and with ``notes``; returns ``{parameter: value}``."""
    values: dict[str, Any] = {}
    for col, fields in zip(st.columns(3), _LAYOUT):
        for field in fields:
            values[field] = _widget(col, field, reference, max_rounds, spread, inert, notes)
    with st.expander("Pooling and steering"):
        for col, fields in zip(st.columns(2), _MORE):
            for field in fields:
                values[field] = _widget(col, field, reference, max_rounds, spread, inert, notes)
    return values


def loss_editor(labels: Sequence[str]) -> tuple[np.ndarray | None, InputError | None]:
    """The loss matrix as an editable table of text cells (rows: decision d, columns:
    true label y), started from ``st.session_state[keys.WI_LOSS]``; returns the matrix read
    strictly (:func:`studio.views.loss_input.parse_loss_table`) or the refusal."""
    names = [str(label) for label in labels]
    base = pd.DataFrame(loss_cells(st.session_state[keys.WI_LOSS]), index=names, columns=names)
    config = {name: st.column_config.TextColumn(name, help=f"Loss of each decision when the truth is {name}")
              for name in names}
    edited = st.data_editor(base, key=loss_editor_key(), column_config=config)
    st.caption("Rows: decision d; columns: true label y. Type numbers with a point as the decimal "
               "separator (2.5, not 2,5).")
    try:
        return parse_loss_table(edited.to_numpy(dtype=object), names), None
    except InputError as exc:
        return None, exc


def refusal_text(exc: Exception) -> str:
    """A refused setting in words: the parameter's name in words (or "Loss matrix"), then
    what is wrong with it."""
    field = str(getattr(exc, "field", ""))
    message = str(exc).removeprefix(f"{field}: ") if field else str(exc)
    if field == "loss":
        return f"Loss matrix: {message}"
    term = PARAMETERS.get(field)
    return f"{term.words}: {message}" if term else (f"{field}: {message}" if field else message)


def _rewrite_matrix(labels: Sequence[str]) -> None:
    """The matrix takes the {0, 1, l_high} form of the high-risk fields; the editor starts again."""
    state = st.session_state
    high = [list(labels).index(h) for h in state.get(keys.WI_HIGH, []) if h in labels]
    state[keys.WI_LOSS] = three_level_loss(len(labels), high, float(state.get(keys.WI_LHIGH_VALUE, 1.0)))
    renew_loss_editor()


def _typed_l_high(labels: Sequence[str]) -> None:
    """Callback of the l_high field: a number rewrites the matrix; anything else is refused
    (the reason kept for the page to show) and the field shows the last valid value again."""
    state = st.session_state
    kept = float(state.get(keys.WI_LHIGH_VALUE, 1.0))
    try:
        value = parse_l_high(state.get(keys.WI_LHIGH))
    except InputError as exc:
        state[keys.WI_LHIGH_NOTE] = l_high_refusal(exc, kept)
        state[keys.WI_LHIGH] = format_loss_cell(kept)
        return
    state[keys.WI_LHIGH_VALUE] = value
    state[keys.WI_LHIGH] = format_loss_cell(value)
    _rewrite_matrix(labels)


def _sync_fields(loss: np.ndarray | None, labels: Sequence[str]) -> bool:
    """Set the high-risk fields for the matrix shown (before the fields are drawn), keeping
    the chosen classes and l_high while they give that matrix
    (:func:`studio.views.loss_input.three_level_fields`); False when the matrix has no
    {0, 1, l_high} form."""
    if loss is None:
        return True
    state = st.session_state
    chosen = [list(labels).index(h) for h in state.get(keys.WI_HIGH, []) if h in labels]
    kept = float(state.get(keys.WI_LHIGH_VALUE, 1.0))
    high, l_high, three_level = three_level_fields(loss, chosen, kept)
    if high != sorted(chosen):
        state[keys.WI_HIGH] = [labels[y] for y in high]
    if l_high != kept:
        state[keys.WI_LHIGH_VALUE] = l_high
        state[keys.WI_LHIGH] = format_loss_cell(l_high)
    return three_level


def loss_section(labels: Sequence[str]) -> tuple[np.ndarray | None, InputError | None]:
    """The high-risk classes, l_high and the matrix itself, kept in step: changing a field
    rewrites the matrix in the {0, 1, l_high} form, and a matrix edited into another
    three-level form sets the fields.  l_high is read strictly; a refused text is named
    and the last valid value stays.  Returns :func:`loss_editor`'s result."""
    p1, p2 = st.columns([3, 1])
    loss, refused = loss_editor(labels)
    three_level = _sync_fields(loss, labels)
    p1.multiselect("High-risk classes", list(labels), key=keys.WI_HIGH, on_change=_rewrite_matrix,
                   args=(list(labels),), help="Missing one of these classes costs l_high; every other miss costs 1.")
    p2.text_input("l_high", key=keys.WI_LHIGH, on_change=_typed_l_high, args=(list(labels),),
                  help=f"{PARAMETERS['l_high'].help} A number from 0 up, with a point as the decimal separator.")
    if (note := st.session_state.pop(keys.WI_LHIGH_NOTE, None)) is not None:
        st.error(note)
    if not st.session_state.get(keys.WI_HIGH):
        st.caption("No class is chosen as high-risk, so every miss costs 1 and l_high changes nothing; choose the "
                   "high-risk classes for l_high to apply.")
    if not three_level:
        st.caption("The matrix was edited cell by cell and no longer has the {0, 1, l_high} form; changing the "
                   "high-risk classes or l_high rewrites it in that form.")
    return loss, refused
