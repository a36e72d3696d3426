"""Session glue of the Case walkthrough page: deep links in and out of the address bar,
the clickable case table and the filters a deep link resets.

A link (``?run=...&method=...&case=...&round=...``) is applied when the query parameters
differ from the view the page last wrote there, i.e. when a teacher's link is opened;
each bad part gives a warning and a valid fallback (:mod:`studio.views.walkthrough_nav`).
"""
from __future__ import annotations

from typing import Sequence

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from studio.views.walkthrough_nav import (
    LINK_KEYS,
    WalkLink,
    link_query,
    parse_link,
    picked_case,
    resolve_choice,
    resolve_round,
)
from dcem.core.vocabulary import method_label
from dcem.store.database import Store
from studio.stepper import preset_round
from studio.tables import MISSING
from studio.literal import literal
from studio.views.session_keys import WALK_LINK_SEEN as LINK_SEEN
from studio.views import session_keys as keys

__all__ = ["FILTER_KEYS", "pending_link", "preset_run", "pick_method", "preset_case", "open_round",
           "case_table_picker", "show_link"]

FILTER_KEYS = {"walk_f_scenario": [], "walk_f_outcome": [], "walk_f_truth": [], "walk_f_harmful": False,
               "walk_f_escalated": False}


def _link_params() -> dict[str, str]:
    return {k: v for k, v in st.query_params.to_dict().items() if k in LINK_KEYS}


def pending_link() -> WalkLink | None:
    """The deep link in the address bar when it is not the view the page wrote there last
    (then the filters are reset so the linked case is listed); else None."""
    params = _link_params()
    if not params or params == st.session_state.get(LINK_SEEN):
        return None
    st.session_state[LINK_SEEN] = params  # applied once, even if the page stops before showing the view
    st.session_state.update({k: (list(v) if isinstance(v, list) else v) for k, v in FILTER_KEYS.items()})
    link = parse_link(params)
    return None if link.empty else link


def preset_run(db: Store, link: WalkLink | None, notes: DeltaGenerator) -> None:
    """Select the linked run in the run picker (key ``run_id``), or warn and keep a valid one."""
    if link is None or link.run is None:
        return
    runs = [r for r in db.runs()["run_id"] if db.done_cells(r)]
    if not runs:
        return
    current = st.session_state.get(keys.WALK_RUN)
    run, message = resolve_choice(link.run, runs, "run", current if current in runs else runs[0])
    st.session_state[keys.WALK_RUN] = run
    if message:
        notes.warning(literal(message))


def pick_method(methods: Sequence[str], default: int, link: WalkLink | None, notes: DeltaGenerator) -> str:
    """The method radio (key ``walk_method``), opened on the linked method when it exists."""
    state = st.session_state
    if state.get("walk_method") not in methods:
        state["walk_method"] = methods[default]
    if link is not None and link.method is not None:
        method, message = resolve_choice(link.method, methods, "method", methods[default])
        state["walk_method"] = method
        if message:
            notes.warning(literal(message))
    return str(st.radio("Method", list(methods), horizontal=True, key="walk_method", format_func=method_label))


def preset_case(link: WalkLink | None, case_ids: Sequence[str], notes: DeltaGenerator) -> None:
    """Open the case selector (key ``walk_case``) on the linked case, or warn."""
    if link is None or (link.case is None and link.run is None):
        return
    case, message = resolve_choice(link.case, case_ids, "case", case_ids[0])
    st.session_state[keys.WALK_CASE] = case
    if message:
        notes.warning(literal(message))


def open_round(link: WalkLink | None, context: object, last: int, notes: DeltaGenerator) -> None:
    """Open the stepper on the linked round (clamped into 1..last with a warning)."""
    if link is None or link.round is None:
        return
    number, message = resolve_round(link.round, last)
    preset_round(context, number)
    if message:
        notes.warning(literal(message))


def case_table_picker(table: pd.DataFrame, case_ids: Sequence[str], *, key: str = "walk_table",
                      target: str = "walk_case") -> None:
    """The sortable case table; clicking a row opens its case (sets ``target``)."""
    event = st.dataframe(table, placeholder=MISSING, hide_index=True, on_select="rerun", selection_mode="single-row",
                         key=key,
                         height=min(38 + 35 * len(table), 300),
                         column_config={"final energy": st.column_config.NumberColumn(format="%.3f")})
    rows = [int(r) for r in event.selection.rows]
    picked = picked_case(rows, st.session_state.get(f"{key}_rows"), list(case_ids))
    st.session_state[f"{key}_rows"] = rows
    if picked is not None:
        st.session_state[target] = picked


def show_link(slot: DeltaGenerator, run: str, method: str, case: str, number: int) -> None:
    """Write the view into the address bar and show its relative link to copy."""
    params = {"run": run, "method": method, "case": case, "round": str(int(number))}
    st.query_params.from_dict(params)
    st.session_state[LINK_SEEN] = params
    query = link_query(run, method, case, number)
    page = str(getattr(st.context, "url", "") or "").split("?")[0]
    with slot.container():
        if page.startswith(("http://", "https://")):
            st.caption("Link to this view (copy it to share this case and round):")
            st.code(page + query, language=None, wrap_lines=True)
        else:
            st.caption("Link to this view (append it to the page address to share it):")
            st.code(query, language=None, wrap_lines=True)
