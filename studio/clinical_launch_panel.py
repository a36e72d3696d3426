"""The Experiments page's clinical launch: a shipped dataset or "Use my case file" (an
upload checked like ``python -m dcem_clinical run --dataset FILE``), the members, the
scenarios and the sizes; Run queues the spec for :func:`studio.experiment_launch.run_pending`."""
from __future__ import annotations

import streamlit as st

from dcem.core.vocabulary import SCENARIOS
from dcem.store.database import Store
from studio.executor_choice import executor_choice
from studio.experiment_launch import queue_launch
from studio.views.clinical_launch_form import (DATASET_CHOICES, OWN_FILE, SEEDS_RANGE, T_MAX_RANGE, read_case_upload,
                                               read_clinical_form)

__all__ = ["clinical_launch_section"]

_MEMBERS_HELP = ("Two to eight members, separated by commas: model keys (smollm2-135m, gemma3-270m, file:..., with "
                 "+lora:ADAPTER), statistical members (stat, stat:tfidf-lr; on DDXPlus-8 also stat:nb-evidence, "
                 "stat:lr-evidence), each with an optional @VIEW to read only part of a case (a case file's own "
                 "views). A language model runs on this machine's CPU (or GPU): a few seconds per case and round.")


def _dataset() -> str | None:
    """The chosen dataset's name (a case file once read), or None while the upload is refused."""
    choice = st.radio("Cases", list(DATASET_CHOICES), format_func=DATASET_CHOICES.get, horizontal=True,
                      key="clin_dataset")
    if choice != OWN_FILE:
        return str(choice)
    upload = st.file_uploader("Case file (.jsonl or .csv: id, text, label; optional views, split)",
                              type=["jsonl", "csv"], key="clin_upload",
                              help="One case per line; docs/own_cases.md describes the format and every check.")
    data, name = (upload.getvalue(), upload.name) if upload is not None else (None, None)
    first = read_case_upload(data, name)
    if first.dataset is None:
        (st.info if data is None else st.error)(first.error or "")
        return None
    c1, c2, c3 = st.columns([2, 2, 1])
    labels = c1.text_input("Label order (optional)", "", key="clin_labels",
                           help="The classes in the order the members see them, separated by commas; empty: sorted.")
    high = c2.multiselect("High-risk classes", list(first.dataset.labels), key="clin_high",
                          help="Missing one of these costs l_high; any other miss costs 1.")
    l_high = c3.number_input("l_high", min_value=0.0, max_value=1000.0, value=5.0, step=0.5, key="clin_lhigh")
    read = read_case_upload(data, name, labels=labels, high_risk=high, l_high=l_high)
    if read.dataset is None:
        st.error(read.error or "")
        return None
    st.caption(read.summary())
    return read.dataset.name


def clinical_launch_section(db: Store) -> None:
    """The clinical launch form; Run queues the run (it starts once the page is drawn)."""
    dataset = _dataset()
    members = st.text_input("Members", "stat:tfidf-lr, stat:tfidf-lr", key="clin_members", help=_MEMBERS_HELP)
    c1, c2, c3, c4, c5 = st.columns(5)
    scenarios = c1.multiselect("Scenarios", SCENARIOS, default=["S1"], key="clin_scen")
    seeds = c2.text_input(f"Seeds ({SEEDS_RANGE[0]} to {SEEDS_RANGE[1]})", "1", key="clin_seeds")
    cal = c3.text_input("CAL cases (empty: the dataset's)", "", key="clin_cal")
    test = c4.text_input("TEST cases (empty: the dataset's)", "", key="clin_test")
    t_max = c5.text_input(f"Round budget T ({T_MAX_RANGE[0]} to {T_MAX_RANGE[1]})", "6", key="clin_t")
    if dataset is None:
        st.button("Run", type="primary", key="clin_run", disabled=True)
        return
    form = read_clinical_form(dataset, members, scenarios, seeds, cal, test, t_max)
    for problem in form.errors:
        st.error(problem)
    if form.spec is not None:
        stored = len(db.done_cells(form.spec.run_id()))
        cells = len(form.spec.scenarios) * len(form.spec.seeds)
        st.caption(f"{cells} cell{'s' if cells != 1 else ''} (scenarios × seeds); {stored} already stored. "
                   "Launching the same settings again resumes; the case file's sha256 is kept with the run.")
    where = executor_choice("clin_executor")
    if st.button("Run", type="primary", key="clin_run", disabled=not form.ok) and form.spec is not None:
        queue_launch(form.spec, where)
