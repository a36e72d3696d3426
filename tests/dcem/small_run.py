"""A small real run shared by the what-if, review and preset tests.

Two scenarios x two seeds of ``run_cell(..., n_train=2000, n_eval=30, ablation=False)``
are computed once per test session and saved into a template DuckDB file once per test
module; each test gets its own copy of that file, so tests can write freely.
"""
from __future__ import annotations

import functools
import shutil
from pathlib import Path
from typing import Iterator

import pytest

from dcem.core.results import ScenarioResult
from dcem.store.database import Store
from dcem.synthetic.experiment import run_cell

RUN_ID = "small-run"
SCENARIOS = ("S1", "S3b")
SEEDS = (0, 1)
N_EVAL = 30


@functools.lru_cache(maxsize=None)
def small_results() -> tuple[ScenarioResult, ...]:
    return tuple(run_cell(s, k, n_train=2000, n_eval=N_EVAL, ablation=False) for s in SCENARIOS for k in SEEDS)


def build_store_file(path: Path) -> Path:
    results = small_results()
    with Store(path) as store:
        store.ensure_run(RUN_ID, kind="synthetic", spec={"test": "small"}, config=results[0].config,
                         seeds=list(SEEDS))
        for result in results:
            store.save_cell(RUN_ID, result)
        store.ledger().finish(RUN_ID)
    return path


@pytest.fixture(scope="module")
def small_run_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_store_file(tmp_path_factory.mktemp("small_run") / "template.duckdb")


@pytest.fixture()
def small_run_store(small_run_file: Path, tmp_path: Path) -> Iterator[Store]:
    path = tmp_path / "run.duckdb"
    shutil.copy(small_run_file, path)
    store = Store(path)
    yield store
    store.close()
