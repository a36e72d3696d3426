"""Exports name the labels beside their indices."""
from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from studio.views.run_compare import export_tables, to_csv_bytes, to_parquet_bytes
from dcem.store.database import Store


def test_exported_outcomes_carry_label_names_from_each_cell(run_db: Path) -> None:
    with Store(run_db) as store:
        outcomes = export_tables(store, "ui-run")["outcomes"]
        cells = {(s, k): list(labels) for s, k, labels in
                 store.con.execute("SELECT scenario, seed, labels FROM cells WHERE run_id = 'ui-run'").fetchall()}
    cols = list(outcomes.columns)
    assert cols.index("truth_label") == cols.index("truth") + 1
    assert cols.index("decision_label") == cols.index("decision") + 1
    for row in outcomes.itertuples():
        labels = cells[(row.scenario, row.seed)]
        assert row.truth_label == labels[row.truth] and row.decision_label == labels[row.decision]
    csv = pd.read_csv(io.BytesIO(to_csv_bytes(outcomes)))
    parquet = pd.read_parquet(io.BytesIO(to_parquet_bytes(outcomes)))
    assert list(csv["decision_label"]) == list(parquet["decision_label"]) == list(outcomes["decision_label"])
    assert set(csv["truth_label"]) <= {name for labels in cells.values() for name in labels}
