"""Merging D-CEM stores checks every row it brings in (finite numbers, non-negative counts,
rows that belong to a run, cell and case, a run defined alike in both files) and refuses
the whole merge at the first bad row, naming table, key and column."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.common.sql_files import run_sql as _sql

from common.db import Database, StoreError
from common.merge_checks import MergeRefused
from common.store_merge import merge_store
from dcem.cli import main as dcem_main
from dcem.store.database import Store
from dcem.store.merge_checks import DCEM_CHECKS
from runtime.call_log import CallLog
from runtime.merge_checks import call_log_checks
from tests.sag.merge_stores import dump

CHECKS = (*DCEM_CHECKS, *call_log_checks(("runs",)))
_ONE_CASE = "(SELECT case_id FROM cases ORDER BY run_id, case_id LIMIT 1)"


@pytest.fixture()
def source(clinical_db: Path, tmp_path: Path) -> Path:
    path = tmp_path / "part.duckdb"
    shutil.copy(clinical_db, path)
    return path


@pytest.fixture()
def empty(tmp_path: Path) -> Path:
    path = tmp_path / "target.duckdb"
    with Store(path) as store:
        CallLog(store)
    return path


def test_the_shared_clinical_store_keeps_every_rule(source: Path, empty: Path) -> None:
    with Database(empty) as db:
        assert merge_store(db, source, CHECKS).added > 0


@pytest.mark.parametrize("mutation, table, column", [
    ("UPDATE cells SET confusion = [[[1.0, 'nan'::DOUBLE]]] WHERE scenario = 'S1'", "cells", "confusion"),
    ("UPDATE cells SET prior = [0.5, 'inf'::DOUBLE] WHERE scenario = 'S1'", "cells", "prior"),
    ("UPDATE cells SET seed = 5 WHERE scenario = 'S1'", "cells", "seed"),
    (f"UPDATE cases SET truth = 99 WHERE case_id = {_ONE_CASE}", "cases", "truth"),
    (f"UPDATE outcomes SET rounds = -1 WHERE case_id = {_ONE_CASE}", "outcomes", "rounds"),
    (f"UPDATE outcomes SET truth = truth + 1 WHERE case_id = {_ONE_CASE}", "outcomes", "truth"),
    (f"UPDATE outcomes SET loss = 'inf' WHERE case_id = {_ONE_CASE}", "outcomes", "loss"),
    (f"UPDATE traces SET case_id = 'ghost' WHERE case_id = {_ONE_CASE}", "traces", "case_id"),
    (f"UPDATE traces SET energy = 'nan' WHERE case_id = {_ONE_CASE}", "traces", "energy"),
    ("UPDATE metrics SET value = 'inf' WHERE metric = (SELECT min(metric) FROM metrics)", "metrics", "value"),
    ("UPDATE metrics SET run_id = 'ghost-run' WHERE metric = (SELECT min(metric) FROM metrics)", "metrics",
     "run_id"),
    ("UPDATE agent_turns SET probabilities = [2.0] WHERE agent = 0", "agent_turns", "probabilities"),
    ("UPDATE llm_calls SET duration_s = -1", "llm_calls", "duration_s"),
    ("INSERT INTO reviews SELECT 'r1', run_id, case_id, method, 'not-a-label', '', 'Ann', now() FROM outcomes "
     "LIMIT 1", "reviews", "final_label"),
    ("INSERT INTO reviews SELECT 'r1', run_id, case_id, 'no-method', 'x', '', 'Ann', now() FROM outcomes "
     "LIMIT 1", "reviews", "method"),
    ("INSERT INTO presets VALUES ('p1', 'mine', '{}', [[0.0, '-inf'::DOUBLE], [1.0, 0.0]], NULL, NULL, now())",
     "presets", "loss"),
    ("UPDATE llm_calls SET run_id = 'ghost-run'", "llm_calls", "run_id"),
])
def test_a_bad_dcem_or_call_log_row_refuses_the_whole_merge(mutation: str, table: str, column: str, source: Path,
                                                           empty: Path) -> None:
    _sql(source, mutation)
    before = dump(empty)
    with Database(empty) as db, pytest.raises(MergeRefused) as info:
        merge_store(db, source, CHECKS)
    assert (info.value.table, info.value.column) == (table, column)
    assert dump(empty) == before


def test_a_finished_run_whose_configuration_differs_from_the_targets_is_refused(source: Path,
                                                                               tmp_path: Path) -> None:
    target = tmp_path / "main.duckdb"
    shutil.copy(source, target)
    _sql(target, "UPDATE runs SET status = 'running', finished_at = NULL")
    _sql(source, "UPDATE runs SET config_json = '{\"t_max\": 99}'")
    before = dump(target)
    with Database(target) as db, pytest.raises(MergeRefused, match="table runs, row .*: config_json = .*differs"):
        merge_store(db, source, CHECKS)
    assert dump(target) == before


def test_the_dcem_command_refuses_a_store_with_a_call_log_it_cannot_check(source: Path, empty: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert dcem_main(["merge", str(source), "--db", str(empty)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "table llm_calls, which this command has no rules to check" in err
    assert dump(empty)["runs"] == []
    with Database(empty) as db, pytest.raises(StoreError, match="no rules to check"):
        merge_store(db, source, DCEM_CHECKS)
