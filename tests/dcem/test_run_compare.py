"""Per-round curves, run comparison and exports."""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from studio.views.run_compare import (
    changed_outcomes,
    export_tables,
    metric_deltas,
    round_curves,
    settings_diff,
    to_csv_bytes,
    to_parquet_bytes,
)
from dcem.store.database import Store
from dcem.synthetic.experiment import run_cell


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    s = Store(tmp_path_factory.mktemp("cmp") / "c.duckdb")
    for run_id, xi in (("a", 1.0), ("b", 0.25)):
        cell = run_cell("S1", 0, n_train=2000, n_eval=20, ablation=False, xi=xi)
        s.ensure_run(run_id, kind="synthetic", spec={"xi": xi, "seeds": [0]}, config=cell.config, seeds=[0])
        s.save_cell(run_id, cell)
    yield s
    s.close()


def test_round_curves_average_the_traces(store: Store) -> None:
    curves = round_curves(store, "a")
    assert list(curves["round"]) == list(range(1, 13)) and set(curves["scenario"]) == {"S1"}
    traces = store.con.execute("SELECT t.decision, c.truth, t.energy FROM traces t JOIN cases c "
                               "USING (run_id, case_id) WHERE t.run_id = 'a' AND t.method = 'dcem' "
                               "AND t.round = 1").df()
    assert curves.loc[0, "accuracy"] == pytest.approx((traces.decision == traces.truth).mean())
    assert curves.loc[0, "energy"] == pytest.approx(traces.energy.mean())


def test_comparison_of_two_runs(store: Store) -> None:
    diff = settings_diff(store, "a", "b")
    assert list(diff["setting"]) == ["xi"]
    deltas = metric_deltas(store, "a", "b")
    row = deltas[(deltas.method == "dcem") & (deltas.metric == "risk")].iloc[0]
    assert row["delta"] == pytest.approx(row["b"] - row["a"])
    changed = changed_outcomes(store, "a", "b")
    outcomes = store.outcomes("a", "dcem").merge(store.outcomes("b", "dcem"), on="case_id")
    expected = ((outcomes.action_x != outcomes.action_y) | (outcomes.decision_x != outcomes.decision_y)).sum()
    assert len(changed) == expected
    assert changed_outcomes(store, "a", "a").empty


def test_exports_round_trip(store: Store) -> None:
    tables = export_tables(store, "a")
    assert set(tables) == {"metrics", "outcomes", "ablation"}
    back = pd.read_csv(io.BytesIO(to_csv_bytes(tables["metrics"])))
    np.testing.assert_allclose(back["value"].to_numpy(), tables["metrics"]["value"].to_numpy())
    parquet = pd.read_parquet(io.BytesIO(to_parquet_bytes(tables["outcomes"])))
    assert len(parquet) == len(tables["outcomes"]) == 20 * 5
