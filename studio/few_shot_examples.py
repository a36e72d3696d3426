"""The walkthrough's view of the retrieval few-shot examples: per agent, the solved CAL
cases its prompt showed in the round on screen (:mod:`studio.views.few_shot_view`).

The examples are read from the call log by :func:`dcem_clinical.informed.turn_examples`
(``dcem`` may not import ``dcem_clinical``, the dashboard may); it is imported only for a
run whose agents used few-shot, so other runs do not load the retrieval libraries.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import streamlit as st

from studio.views.few_shot_view import EXAMPLES_NOTE, NOT_STORED_NOTE, agent_examples, examples_heading
from dcem.store.case_reads import few_shot_agents
from dcem.store.database import Store
from studio.literal import literal

__all__ = ["show_few_shot_examples"]


def show_few_shot_examples(store: Store, run_id: str, case_id: str, method: str, round_number: int, *,
                           names: Mapping[int, str], labels: Sequence[str], key: str) -> None:
    """An expander with one compact table per few-shot agent (nothing for a run without few-shot)."""
    few_shot = few_shot_agents(store, run_id, case_id)
    if not few_shot:
        return
    from dcem_clinical.informed import run_has_examples, turn_examples  # only few-shot runs pay for these

    examples = turn_examples(store, run_id, case_id, method)
    with st.expander(examples_heading(round_number), expanded=False):
        st.caption(EXAMPLES_NOTE)
        if examples.empty and not run_has_examples(store, run_id):  # never stored here
            st.info(NOT_STORED_NOTE)
            return
        views = agent_examples(examples, few_shot, names, labels, round_number)
        for view in views:
            st.markdown(f"**{literal(view.name)}** (k = {view.k})")
            if not view.table.empty:
                st.dataframe(view.table, hide_index=True, key=f"{key}_{view.agent}")
            st.caption(view.caption)
