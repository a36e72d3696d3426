"""A small real run stored once for the dashboard tests."""
from __future__ import annotations

from pathlib import Path

import pytest

from dcem.store import Store
from dcem.synthetic_experiment import run_cell


@pytest.fixture(scope="session")
def run_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("app") / "runs.duckdb"
    with Store(path) as store:
        cells = [run_cell(s, 0, n_train=2000, n_eval=24, ablation=False) for s in ("S1", "S3b")]
        store.ensure_run("ui-run", kind="synthetic", spec={"test": True}, config=cells[0].config, seeds=[0])
        for cell in cells:
            store.save_cell("ui-run", cell)
        store.finish_run("ui-run")
    return path
