"""Merging training store files: a well-formed run (finished, stopped or running) merges
whole once; a row breaking a rule of its table refuses the whole merge, naming the table
and the column, with nothing written."""
from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from common.db import StoreError
from common.merge_checks import MergeRefused
from common.store_merge import merge_store
from training.import_export import import_training_export
from training.merge_checks import training_store_checks
from training.store import StepRow, TrainingStore

from .export_copies import copy_export, dump

_RUN = "(SELECT min(run_id) FROM train_runs WHERE status = 'finished')"


def _native(store: TrainingStore, run_id: str, status: str) -> None:
    """A run as training records it, left ``status`` (a stopped run has finished_at, no adapter)."""
    store.start_run(run_id, kind="diagnostician", method="grpo", base_model="smollm2-135m", settings={"r": 16},
                    data_name="ddxplus8:train", data_hash="h", n_train=40)
    store.add_eval(run_id, 0, "heldout", 2, 1, 8, "A", 1.0)
    store.add_answers(run_id, 0, "heldout", [("c1", "A", "A"), ("c2", "A", "")])
    store.add_step(run_id, StepRow(1, -0.2, -0.5, 0.25, 0.0, 0.0, 8, 2500, 3.0))
    if status != "running":
        store.finish(run_id, status)


@pytest.fixture(scope="module")
def part(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding an imported finished run, a stopped run and a running one."""
    folder = tmp_path_factory.mktemp("train_merge")
    path = folder / "part.duckdb"
    with TrainingStore(path) as store:
        assert len(import_training_export(store, copy_export("ddx-views-r1", folder))) == 1
        _native(store, "stopped1", "stopped")
        _native(store, "running1", "running")
    return path


@pytest.fixture()
def source(part: Path, tmp_path: Path) -> Path:
    return Path(shutil.copy(part, tmp_path / "source.duckdb"))


@pytest.fixture()
def target(tmp_path: Path) -> Path:
    path = tmp_path / "target.duckdb"
    with TrainingStore(path):
        pass
    return path


def _merge(target: Path, source: Path) -> object:
    with TrainingStore(target) as db:
        return merge_store(db, source, training_store_checks())


def test_a_well_formed_store_merges_whole_once(source: Path, target: Path) -> None:
    report = _merge(target, source)
    training = sum(t.added for t in report.tables if t.table.startswith("train_"))
    assert dump(target) == dump(source) and training == sum(len(v) for v in dump(source).values())
    with TrainingStore(target, read_only=True) as store:  # the ledger's rows of the runs came along
        assert store.con.execute("SELECT count(*) FROM ledger_runs").fetchone()[0] == len(dump(source)["train_runs"])
    again = _merge(target, source)
    assert again.added == 0 and again.replaced == 0 and dump(target) == dump(source)  # type: ignore[attr-defined]


def test_every_training_table_has_rules() -> None:
    tables = {c.table for c in training_store_checks()}
    assert tables == {"train_runs", "train_steps", "train_evals", "train_answers", "ledger_runs", "ledger_units"}


@pytest.mark.parametrize("mutation, table, column", [
    (f"UPDATE train_runs SET status = 'paused' WHERE run_id = {_RUN}", "train_runs", "status"),
    ("UPDATE train_runs SET finished_at = NULL WHERE run_id = 'stopped1'", "train_runs", "finished_at"),
    ("UPDATE train_runs SET finished_at = created_at WHERE run_id = 'running1'", "train_runs", "finished_at"),
    (f"UPDATE train_runs SET finished_at = created_at - INTERVAL 1 DAY WHERE run_id = {_RUN}", "train_runs",
     "finished_at"),
    ("UPDATE train_runs SET kind = ' ' WHERE run_id = 'stopped1'", "train_runs", "kind"),
    ("UPDATE train_runs SET settings_json = 'not json' WHERE run_id = 'stopped1'", "train_runs", "settings_json"),
    ("UPDATE train_runs SET settings_json = '[1]' WHERE run_id = 'stopped1'", "train_runs", "settings_json"),
    ("UPDATE train_runs SET n_train = -1 WHERE run_id = 'stopped1'", "train_runs", "n_train"),
    (f"UPDATE train_runs SET adapter_file = NULL, adapter_sha256 = NULL WHERE run_id = {_RUN}", "train_runs",
     "adapter_file"),
    (f"UPDATE train_runs SET adapter_sha256 = 'xyz' WHERE run_id = {_RUN}", "train_runs", "adapter_sha256"),
    ("UPDATE train_steps SET loss = 'nan' WHERE run_id = 'stopped1'", "train_steps", "loss"),
    ("UPDATE train_steps SET accuracy = 1.5 WHERE run_id = 'stopped1'", "train_steps", "accuracy"),
    ("UPDATE train_steps SET tokens = -1 WHERE run_id = 'stopped1'", "train_steps", "tokens"),
    ("UPDATE train_steps SET step = 0 WHERE run_id = 'stopped1'", "train_steps", "step"),
    ("UPDATE train_steps SET seconds = 'inf' WHERE run_id = 'stopped1'", "train_steps", "seconds"),
    ("INSERT INTO train_steps SELECT * REPLACE ('ghost' AS run_id) FROM train_steps WHERE run_id = 'stopped1'",
     "train_steps", "run_id"),
    ("UPDATE train_evals SET n_correct = n_items + 1 WHERE run_id = 'stopped1'", "train_evals", "n_correct"),
    ("UPDATE train_evals SET top_letter_share = 2 WHERE run_id = 'stopped1'", "train_evals", "top_letter_share"),
    ("UPDATE train_evals SET n_options = -8 WHERE run_id = 'stopped1'", "train_evals", "n_options"),
    ("INSERT INTO train_evals SELECT * REPLACE ('ghost' AS run_id) FROM train_evals WHERE run_id = 'stopped1'",
     "train_evals", "run_id"),
    ("UPDATE train_answers SET item_id = '' WHERE run_id = 'stopped1' AND item_id = 'c1'", "train_answers",
     "item_id"),
    ("INSERT INTO train_answers SELECT * REPLACE ('ghost' AS run_id) FROM train_answers WHERE run_id = 'stopped1'",
     "train_answers", "run_id"),
])
def test_a_row_breaking_a_rule_refuses_the_merge(source: Path, target: Path, mutation: str, table: str,
                                                 column: str) -> None:
    con = duckdb.connect(str(source))
    con.execute(mutation)
    con.close()
    before = dump(target)
    with pytest.raises(MergeRefused) as caught:
        _merge(target, source)
    assert (caught.value.table, caught.value.column) == (table, column)
    assert f"table {table}" in str(caught.value) and "\n" not in str(caught.value) and dump(target) == before


def test_a_run_both_files_hold_must_be_defined_alike(source: Path, target: Path) -> None:
    _merge(target, source)
    con = duckdb.connect(str(source))
    con.execute("""UPDATE train_runs SET settings_json = '{"r": 32}' WHERE run_id = 'stopped1'""")
    con.close()
    before = dump(target)
    with pytest.raises(MergeRefused, match="train_runs, row .*stopped1.*settings_json") as caught:
        _merge(target, source)
    assert caught.value.column == "settings_json" and dump(target) == before


def test_a_training_store_merged_without_the_rules_is_refused(source: Path, target: Path) -> None:
    with TrainingStore(target) as db, pytest.raises(StoreError, match="table (train_answers|ledger_runs), which "
                                                                      "this command has no rules to check"):
        merge_store(db, source, ())
