"""The Models page's section on trained adapters: training runs, their curves and the
held-out accuracy before and after, with chance and the answer distribution beside it."""
from __future__ import annotations

import numpy as np
import plotly.express as px
import streamlit as st

from common.db import StoreError, default_db_path
from studio.literal import literal
from studio.store_scope import open_for_run
from training.store import TrainingStore
from training.views import CONSTANT_SHARE, curve_frame, heldout_table, paired_table, runs_table

__all__ = ["training_section"]


def training_section() -> None:
    st.subheader("Trained adapters")
    st.write("LoRA adapters trained on the packaged models (`python -m dcem_clinical train`, "
             "`python -m sag train`; see docs/training.md). A finished run's adapter is a GGUF file that "
             "any agent can use: its model key is shown below.")
    path = default_db_path()
    if not path.is_file():  # listing runs never creates a store
        st.info("No training run is stored yet.")
        return
    try:
        store = open_for_run(TrainingStore, str(path))
    except StoreError as exc:
        st.error(f"The result store cannot be opened: {literal(exc)}")
        return
    runs = store.runs()
    if runs.empty:
        st.info("No training run is stored yet.")
        return
    st.dataframe(runs_table(runs), hide_index=True, key="models_train_runs")
    run_id = st.selectbox("Training run", list(runs["run_id"]), key="models_train_pick")
    row = runs[runs["run_id"] == run_id].iloc[0]
    if row["adapter_file"]:
        st.code(f"{row['base_model']}+lora:file:{row['adapter_file']}", language=None)
    curves = curve_frame(store.steps(run_id))
    if curves.empty:
        st.caption("No step recorded yet.")
    else:
        fig = px.line(curves, x="step", y="value", facet_col="curve", facet_col_wrap=2, markers=False)
        fig.update_yaxes(matches=None, title=None)
        fig.for_each_annotation(lambda a: a.update(text=a.text.split("=", 1)[-1]))
        st.plotly_chart(fig, key="models_train_curves")
    held = heldout_table(store.evals(run_id))
    if not held.empty:
        st.caption("Held-out items, never trained on. Chance is 1 / number of options; a model that gives one "
                   f"answer to more than {CONSTANT_SHARE:.0%} of the items is flagged, whatever its accuracy.")
        st.dataframe(held, hide_index=True, key="models_train_heldout", column_config={
            "Accuracy": st.column_config.NumberColumn(format="percent"),
            "Chance": st.column_config.NumberColumn(format="percent"),
            "Its share": st.column_config.NumberColumn(format="percent")})
    paired = paired_table(store.answers(run_id), np.random.default_rng(0))
    if not paired.empty:
        st.caption("Trained against untrained on the same held-out items: the difference of accuracies and its "
                   "95 % paired bootstrap interval (10,000 resamples of the items, seed 0). An interval that "
                   "contains 0 shows no change that this many items can tell apart from chance.")
        st.dataframe(paired, hide_index=True, key="models_train_paired", column_config={
            "Before": st.column_config.NumberColumn(format="percent"),
            "After": st.column_config.NumberColumn(format="percent"),
            "Difference": st.column_config.NumberColumn(format="%+.3f")})
