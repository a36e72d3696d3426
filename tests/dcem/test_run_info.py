"""What a stored run is: kind, methods, dataset, scenarios and agents."""
from __future__ import annotations

from pathlib import Path

import pytest

from dcem.analysis.run_info import RUN_COLUMNS, describe_run, is_llm_run, run_kind, run_methods, runs_overview
from dcem.store.database import Store, StoreError


def test_runs_overview_names_the_clinical_dataset_scenarios_and_agents(clinical_db: Path) -> None:
    with Store(clinical_db) as store:
        run = store.latest_run("clinical")
        table = runs_overview(store)
        assert list(table.columns) == RUN_COLUMNS and list(table["run_id"]) == [run, "ui-run"]
        row = table.set_index("run_id").loc[run]
        assert (row["kind"], row["dataset"], row["scenarios"], row["seeds"], row["agents"]) == (
            "clinical", "ddxplus8", "S2", "0", "fake-a, fake-b")
        assert run_kind(store, run) == "clinical" and is_llm_run(store, run) and not is_llm_run(store, "ui-run")
        assert run_methods(store, run) == ["single", "free", "pool", "dcem", "dcem_noesc"]
        assert run_methods(store, run, mediated_only=True) == ["dcem", "dcem_noesc"]
        assert "ddxplus8" in describe_run(store, run) and "fake-a, fake-b" in describe_run(store, run)
        assert describe_run(store, run).endswith("scored answers.")  # no option set, none named
        assert describe_run(store, "ui-run") == "Synthetic run."
        with pytest.raises(StoreError, match="no run"):
            run_kind(store, "nope")
