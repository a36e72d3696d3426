"""The Models page's section on trained adapters: the shipped adapters with their training
record, and the training runs of the store, each with its curves and the held-out accuracy
before and after, with chance, the answer distribution and the paired difference beside it."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.express as px
import streamlit as st

from common.db import PROJECT_ROOT, StoreError, default_db_path
from common.errors import ProjectError
from sag.runs.shipped_runs import group_comparisons
from sag.runs.versus import versus_frame
from studio.literal import literal
from studio.store_scope import open_for_run
from training.adapter_guide import guide_rows
from training.class_recall import heldout_class_recall
from training.shipped import read_shipped, shipped_exports
from training.store import TrainingStore
from training.views import CONSTANT_SHARE, curve_frame, heldout_table, paired_table, runs_table

__all__ = ["training_section"]


def training_section() -> None:
    st.subheader("Trained adapters")
    st.write("LoRA adapters trained on the packaged models (`python -m dcem_clinical train`, "
             "`python -m sag train`; see docs/training.md). An adapter is a GGUF file that any agent can use "
             "through its model key, shown below.")
    _shipped()
    _stored()


def _shipped() -> None:
    names = [p.name for p in shipped_exports()]
    if not names:
        return
    st.markdown("**Shipped adapters** (`data/adapters/`, their records in `data/results/training/`)")
    st.caption("What each shipped adapter is for, the input it expects and where it was measured. An adapter "
               "answers the kind of input it was trained on; other input says little about what it learned.")
    st.dataframe(pd.DataFrame(guide_rows(names)), hide_index=True, key="models_shipped_guide")
    name = st.selectbox("Shipped adapter", names, key="models_shipped_pick")
    try:
        shipped = read_shipped(name)
    except ProjectError as exc:
        st.error(f"The shipped adapter {literal(name)} cannot be read: {literal(exc)}")
        return
    if shipped.group_file is not None:
        st.caption("A trained group: its group file gives each role its adapter. Play it with")
        file = shipped.group_file
        shown = file.relative_to(PROJECT_ROOT) if file.is_relative_to(PROJECT_ROOT) else file
        st.code(f"python -m sag run --group {shown} --benchmark medqa", language=None)
        _group_heldout(file)
    else:
        st.code(shipped.adapter_key, language=None)
    run = shipped.run
    st.caption(f"{run['kind']}, {run['method']}, trained on {run['data_name']} ({run['n_train']} items); "
               f"made by: {shipped.manifest['command']}")
    _record(shipped.steps, shipped.evals, shipped.answers, "models_shipped", str(run["data_name"]))


def _group_heldout(group_file: Path) -> None:
    """The shipped held-out runs of a trained group against the untrained group."""
    try:
        name = str(json.loads(group_file.read_text(encoding="utf-8"))["name"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        st.error(f"The group file cannot be read: {literal(exc)}")
        return
    comparisons, problems = group_comparisons(name)
    for problem in problems:
        st.error(f"A shipped run export cannot be read: {literal(problem)}")
    if not comparisons:
        st.caption("No shipped held-out run of this group yet (`data/results/sag_runs/`).")
        return
    st.caption("Held-out items played by this group and by the untrained group, on the items both answered. "
               "Chance is the mean of 1 / number of options; the best single letter is the most one constant "
               f"answer reaches; a group that gives one answer to more than {CONSTANT_SHARE:.0%} of the items is "
               "flagged, whatever its accuracy.")
    for c in comparisons:
        st.markdown(f"**{literal(c.benchmark)}** (from data/results/sag\\_runs/{literal(c.export)})")
        st.dataframe(versus_frame(list(c.rows)), hide_index=True, key=f"models_group_vs_{c.export}_{c.run}",
                     column_config={name: st.column_config.NumberColumn(format="percent")
                                    for name in ("Chance", "Accuracy", "Its share", "Refused")}
                     | {"Run - base": st.column_config.NumberColumn(format="%+.3f")})


NO_STORED_RUN = ("No training run of your own is stored yet: the shipped adapters above bring their records with "
                 "them; a run of `python -m dcem_clinical train` or `python -m sag train` is listed here.")


def _stored() -> None:
    st.markdown("**Your training runs** (the result store)")
    path = default_db_path()
    if not path.is_file():  # listing runs never creates a store
        st.info(NO_STORED_RUN)
        return
    try:
        store = open_for_run(TrainingStore, str(path))
    except StoreError as exc:
        st.error(f"The result store cannot be opened: {literal(exc)}")
        return
    runs = store.runs()
    if runs.empty:
        st.info(NO_STORED_RUN)
        return
    st.dataframe(runs_table(runs), hide_index=True, key="models_train_runs")
    run_id = st.selectbox("Training run", list(runs["run_id"]), key="models_train_pick")
    row = runs[runs["run_id"] == run_id].iloc[0]
    if row["adapter_file"] and str(row["adapter_file"]).endswith(".json"):
        st.caption("A trained group: its group file gives each role its adapter. Play it with")
        st.code(f"python -m sag run --group {row['adapter_file']} --benchmark medqa", language=None)
    elif row["adapter_file"]:
        st.code(f"{row['base_model']}+lora:file:{row['adapter_file']}", language=None)
    _record(store.steps(run_id), store.evals(run_id), store.answers(run_id), "models_train", str(row["data_name"]))


def _record(steps: pd.DataFrame, evals: pd.DataFrame, answers: pd.DataFrame, key: str, data_name: str) -> None:
    curves = curve_frame(steps)
    if curves.empty:
        st.caption("No step recorded yet.")
    else:
        fig = px.line(curves, x="step", y="value", facet_col="curve", facet_col_wrap=2, markers=False)
        fig.update_yaxes(matches=None, title=None)
        fig.for_each_annotation(lambda a: a.update(text=a.text.split("=", 1)[-1]))
        st.plotly_chart(fig, key=f"{key}_curves")
    held = heldout_table(evals)
    if not held.empty:
        st.caption("Held-out items, never trained on. Chance is 1 / number of options; a model that gives one "
                   f"answer to more than {CONSTANT_SHARE:.0%} of the items is flagged, whatever its accuracy.")
        st.dataframe(held, hide_index=True, key=f"{key}_heldout", column_config={
            "Accuracy": st.column_config.NumberColumn(format="percent"),
            "Chance": st.column_config.NumberColumn(format="percent"),
            "Its share": st.column_config.NumberColumn(format="percent")})
    _class_recall(answers, key, data_name)
    paired = paired_table(answers, np.random.default_rng(0))
    if not paired.empty:
        st.caption("Trained against untrained on the same held-out items: the difference of accuracies and its "
                   "95 % paired bootstrap interval (10,000 resamples of the items, seed 0). An interval that "
                   "contains 0 shows no change that this many items can tell apart from chance.")
        st.dataframe(paired, hide_index=True, key=f"{key}_paired", column_config={
            "Before": st.column_config.NumberColumn(format="percent"),
            "After": st.column_config.NumberColumn(format="percent"),
            "Difference": st.column_config.NumberColumn(format="%+.3f")})


def _class_recall(answers: pd.DataFrame, key: str, data_name: str) -> None:
    """Recall per class beside the accuracy, a class never got right in red words."""
    table, flags = heldout_class_recall(answers, data_name)
    if table.empty:
        return
    st.caption("Recall per class: of the held-out items whose right answer is that class, the share answered "
               "right, before and after training (\"Answered after\": how often the class was the answer at all). "
               "An accuracy can be high while a class is never recognised.")
    st.dataframe(table, hide_index=True, key=f"{key}_class_recall", column_config={
        "Recall before": st.column_config.NumberColumn(format="percent"),
        "Recall after": st.column_config.NumberColumn(format="percent")})
    for flag in flags:
        st.markdown(f":red[{literal(flag)}]")
