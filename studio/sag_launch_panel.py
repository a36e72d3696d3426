"""The Agent group page's launch panel: Items, Seed and Rounds typed as text, read strictly
(:mod:`studio.views.sag_launch_fields`), each refusal shown under its field, and Run disabled
while any field is invalid, so a run never goes with values the screen does not show.

The fields stand outside a form on purpose: a form's submit button cannot react to typing
before it is pressed, whereas here each committed entry (Enter or leaving the field) reruns
the page, and Run is enabled only for values that were read exactly as shown.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from common.db import StoreError, default_db_path
from common.errors import ProjectError
from sag.group.config import ROLES
from studio.views.sag_launch import launch_message, launch_spec
from studio.views.sag_launch_fields import (ITEMS_FIELD, ITEMS_RANGE, ROUNDS_FIELD, ROUNDS_RANGE, SEED_FIELD,
                                            SEED_RANGE, SagLaunchFields, read_sag_launch)
from sag.runs.run import SagRunSpec
from sag.training.trained_adapters import adapter_choices
from sag.store.tables import SagStore
from studio.executor_choice import executor_choice
from studio.sag_session import launch_run
from studio.literal import literal
from studio.store_scope import open_for_run
from training.store import TrainingStore
from studio.views.session_keys import AG_RUN as RUN_KEY

__all__ = ["RUN_KEY", "launch_fields", "checked_spec", "launch_button", "adapter_pick"]

NO_ADAPTER = "none (the packaged models)"


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


def adapter_pick() -> list[tuple[str, str, tuple[str, ...]]] | None:
    """A finished training run's adapters for roles of the group (a trained group: each
    adapter on the roles that trained it), or None."""
    path = default_db_path()
    if not path.is_file():
        return None
    try:
        runs = open_for_run(TrainingStore, str(path)).runs()
    except StoreError as exc:
        st.caption(f"Trained adapters cannot be listed: {literal(exc)}")
        return None
    choices, problems = adapter_choices(runs)
    for line in problems:
        st.caption(f"Not offered: {literal(line)}")
    if not choices:
        st.caption("No trained adapter yet (python -m dcem_clinical train, python -m sag train; see the Models page).")
        return None
    c1, c2 = st.columns(2)
    labels = {c.label: c for c in choices}
    picked = c1.selectbox("Trained adapter", [NO_ADAPTER, *labels], key="ag_adapter")
    if picked == NO_ADAPTER:
        return None
    choice = labels[picked]
    if choice.fixed:
        c2.caption("Each role uses the adapter it trained: "
                   + "; ".join(f"{', '.join(roles)}: {Path(file).name}" for _, file, roles in choice.assignments))
        return list(choice.assignments)
    base, file, default = choice.assignments[0]
    roles = c2.multiselect("Roles that use it", [r.value for r in ROLES], default=list(default), key="ag_adapter_roles")
    return [(base, file, tuple(roles))]


def checked_spec(benchmark: str, group: str, fields: SagLaunchFields,
                 adapter: Sequence[tuple[str, str, tuple[str, ...]]] | None = None) -> SagRunSpec | None:
    """The run the panel describes, or None while a field is invalid (its message is under
    the field) or the settings are refused (the refusal is shown here)."""
    values = fields.values()
    if values is None:
        return None
    try:
        return launch_spec(benchmark, group, *values, adapter=adapter)
    except ProjectError as exc:
        st.error(f"The run could not be made: {literal(exc)}")
        return None


def launch_button(db: SagStore, spec: SagRunSpec | None) -> None:
    """Where the items run, and Run (disabled while ``spec`` is None): launches ``spec`` and
    shows its outcome, then selects the new run for the views below."""
    where = executor_choice("ag_executor")
    pressed = st.button("Run", type="primary", key="ag_launch_run", disabled=spec is None)
    if not pressed or spec is None:
        return
    try:
        summary = launch_run(db, spec, executor=where)
    except ProjectError as exc:
        st.error(f"The run could not be made: {literal(exc)}")
    else:
        (st.warning if summary.failed else st.success)(launch_message(summary))
        st.session_state[RUN_KEY] = summary.run_id
