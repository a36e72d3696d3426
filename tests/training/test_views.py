"""The training tables name columns in words and put chance and the answer distribution
beside every held-out accuracy."""
from __future__ import annotations

from pathlib import Path

import pytest

from training.store import StepRow, TrainingStore
from training.views import curve_frame, heldout_table, runs_table


def test_tables_of_a_stored_run(tmp_path: Path) -> None:
    with TrainingStore(tmp_path / "t.duckdb") as store:
        assert runs_table(store.runs()).empty and curve_frame(store.steps("x")).empty
        store.start_run("r1", kind="diagnostician", method="grpo", base_model="smollm2-135m",
                        settings={"steps": 3}, data_name="ddxplus8:train", data_hash="h", n_train=495)
        for k in (1, 2):
            store.add_step("r1", StepRow(k, 0.1 * k, -0.5 + k / 10, 0.25 * k, 0.01 * k, 0.0, 8, 2500, 12.0))
        store.add_eval("r1", 0, "heldout", 200, 26, 8, "A", 0.98)
        store.add_eval("r1", 3, "heldout", 200, 130, 8, "C", 0.31)
        runs = runs_table(store.runs())
        assert runs.loc[0, "Steps done"] == "2 of 3" and runs.loc[0, "Status"] == "running"
        curves = curve_frame(store.steps("r1"))
        assert set(curves["curve"]) == {"Mean reward (batch)", "Accuracy on the batch", "KL to the base", "Loss"}
        assert len(curves) == 8
        held = heldout_table(store.evals("r1"))
    assert list(held["Step"]) == ["before training", "after step 3"]
    assert held.loc[0, "Accuracy"] == pytest.approx(0.13) and held.loc[0, "Chance"] == pytest.approx(0.125)
    assert held.loc[0, "Flag"].startswith("one answer") and held.loc[1, "Flag"] == ""
