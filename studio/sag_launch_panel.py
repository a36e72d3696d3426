"""The Agent group page's launch panel: Items, Seed and Rounds typed as text, read strictly
(:mod:`sag.launch_fields`), each refusal shown under its field, and Run disabled while any
field is invalid, so a run never goes with values the screen does not show.

The fields stand outside a form on purpose: a form's submit button cannot react to typing
before it is pressed, whereas here each committed entry (Enter or leaving the field) reruns
the page, and Run is enabled only for values that were read exactly as shown.
"""
from __future__ import annotations

from collections.abc import Sequence

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from common.errors import ProjectError
from sag.launch import launch_message, launch_spec
from sag.launch_fields import (ITEMS_FIELD, ITEMS_RANGE, ROUNDS_FIELD, ROUNDS_RANGE, SEED_FIELD, SEED_RANGE,
                               SagLaunchFields, read_sag_launch)
from sag.run import SagRunSpec
from sag.store.tables import SagStore
from studio.sag_session import launch_run
from studio.literal import literal

__all__ = ["RUN_KEY", "launch_fields", "checked_spec", "launch_button"]

RUN_KEY = "ag_run"  # session key of the page's Run selectbox: a launched run is shown at once


def _label(field: str, bounds: tuple[int, int]) -> str:
    return f"{field} ({bounds[0]} to {bounds[1]})"


def launch_fields(columns: Sequence[DeltaGenerator]) -> SagLaunchFields:
    """The Items, Seed and Rounds text fields in three ``columns``, read strictly; each
    field's message, if any, is shown under it."""
    c_items, c_seed, c_rounds = columns
    items = c_items.text_input(_label(ITEMS_FIELD, ITEMS_RANGE), "3", key="ag_items")
    seed = c_seed.text_input(_label(SEED_FIELD, SEED_RANGE), "0", key="ag_seed")
    t_max = c_rounds.text_input(_label(ROUNDS_FIELD, ROUNDS_RANGE), "3", key="ag_tmax")
    fields = read_sag_launch(items, seed, t_max)
    for column, field in zip(columns, (fields.items, fields.seed, fields.t_max)):
        if field.error:
            column.error(field.error)
    return fields


def checked_spec(benchmark: str, group: str, fields: SagLaunchFields) -> SagRunSpec | None:
    """The run the panel describes, or None while a field is invalid (its message is under
    the field) or the settings are refused (the refusal is shown here)."""
    values = fields.values()
    if values is None:
        return None
    try:
        return launch_spec(benchmark, group, *values)
    except ProjectError as exc:
        st.error(f"The run could not be made: {literal(exc)}")
        return None


def launch_button(db: SagStore, spec: SagRunSpec | None) -> None:
    """Run (disabled while ``spec`` is None): launches ``spec`` and shows its outcome, then
    selects the new run for the views below."""
    pressed = st.button("Run", type="primary", key="ag_launch_run", disabled=spec is None)
    if not pressed or spec is None:
        return
    try:
        summary = launch_run(db, spec)
    except ProjectError as exc:
        st.error(f"The run could not be made: {literal(exc)}")
    else:
        (st.warning if summary.failed else st.success)(launch_message(summary))
        st.session_state[RUN_KEY] = summary.run_id
