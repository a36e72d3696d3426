"""Old stores open with every run in the ledger: D-CEM, SAG and training runs (and their done
and failed units) copied from the tables each kind kept, once; a second open adds nothing.

Stores of earlier versions: ``tests/fixtures/store_before_split.duckdb`` (a synthetic and a
clinical run, no ``cell_failures`` table yet) and ``sag_store_before_units.duckdb.gz`` (two
SAG runs); the rest is written by today's store classes in a tmp dir.
"""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from common.db import Database, git_revision
from common.ledger import Ledger
from common.ledger_adopt import adopt_old_runs
from dcem.core.config import MediatorConfig
from dcem.store.database import Store
from dcem.store.grid import cell_key
from sag.group.failures import FailedItem
from sag.store.tables import SagStore
from tests.sag.store.test_old_sag_store import RUNS as SAG_RUNS
from tests.sag.store.test_old_sag_store import SPECS as SAG_SPECS
from training.store import StepRow, TrainingStore

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REVISION = "fbe39486841d4ff1d6a0814736a0fdee691c629f"  # the fixture's release


def _snapshot(store: Database) -> list[tuple[object, ...]]:
    cur = store.con.cursor()
    return (cur.execute("SELECT * FROM ledger_runs ORDER BY run_id").fetchall()
            + cur.execute("SELECT * FROM ledger_units ORDER BY run_id, unit_key").fetchall())


@pytest.fixture()
def dcem_store(tmp_path: Path) -> Path:
    path = tmp_path / "old.duckdb"
    shutil.copy(FIXTURES / "store_before_split.duckdb", path)
    return path


@pytest.fixture()
def sag_store(tmp_path: Path) -> Path:
    path = tmp_path / "old_sag.duckdb"
    with gzip.open(FIXTURES / "sag_store_before_units.duckdb.gz", "rb") as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return path


def test_an_old_dcem_store_lists_its_runs_with_their_cells(dcem_store: Path) -> None:
    with Database(dcem_store) as plain:  # no D-CEM migration: the older schema, without cell_failures
        old = plain.con.execute("SELECT run_id, kind, spec_json, config_json, seeds, status FROM runs").fetchall()
        ledger = Ledger(plain)
        runs = ledger.runs().set_index("run_id")
        assert set(runs.index) == {"old-synthetic", "llm-979976750fdd"}
        for run_id, kind, spec, config, seeds, status in old:
            run = ledger.run(run_id)
            assert (run.kind, run.status, run.revision) == (kind, status, REVISION)
            assert run.spec == {"spec": json.loads(spec), "config": json.loads(config), "seeds": list(seeds)}
        assert ledger.done_keys("old-synthetic") == {cell_key("S3b", 0)}
        assert ledger.done_keys("llm-979976750fdd") == {cell_key("S2", 0)}
        assert (ledger.run("old-synthetic").done, ledger.run("old-synthetic").failed) == (1, 0)


def test_dcem_failures_carry_their_latest_message_until_the_cell_is_stored(dcem_store: Path) -> None:
    with Store(dcem_store) as store:
        store.ensure_run("grid-1", kind="synthetic", spec={"scenarios": ["S1"]}, config=MediatorConfig(),
                         seeds=[0, 1])
        store.save_cell_failure("grid-1", "S1", 0, "first")
        store.save_cell_failure("grid-1", "S1", 0, "second")
        store.save_cell_failure("old-synthetic", "S3b", 0, "failed before it was stored")
        store.con.execute("UPDATE runs SET status = 'failed' WHERE run_id = 'grid-1'")  # as code before the ledger did
        ledger = Ledger(store)
        assert ledger.run("grid-1").status == "failed"
        units = ledger.units("grid-1")
        assert units.to_dict("list")["unit_key"] == [cell_key("S1", 0)]
        assert (units.state.iloc[0], units.message.iloc[0]) == ("failed", "second")
        assert ledger.done_keys("old-synthetic") == {cell_key("S3b", 0)}  # stored: not a failure
        assert ledger.run("old-synthetic").failed == 0
        # a newer failure, written by today's code after the ledger copied the old ones, is picked up
        store.save_cell_failure("grid-1", "S1", 0, "third")
        store.save_cell_failure("grid-1", "S1", 1, "other cell")
        changed = adopt_old_runs(store.con)
        assert changed["cell_failures"] == 2 and changed["runs"] == 0
        assert dict(zip(*Ledger(store).units("grid-1")[["unit_key", "message"]].to_dict("list").values())) == {
            cell_key("S1", 0): "third", cell_key("S1", 1): "other cell"}


def test_old_sag_runs_are_listed_with_the_spec_a_resume_gives(sag_store: Path) -> None:
    with SagStore(sag_store) as store:
        answered = {run_id: store.done_items(run_id) for run_id in SAG_RUNS}
        store.save_failure(SAG_RUNS[0], FailedItem("not-yet", "the model server is down"))
        store.save_failure(SAG_RUNS[0], FailedItem(sorted(answered[SAG_RUNS[0]])[0], "failed, then answered"))
        ledger = Ledger(store)
        for spec, run_id in zip(SAG_SPECS, SAG_RUNS):
            run = ledger.run(run_id)
            assert run.kind == "sag" and run.status == "finished"
            assert run.spec == json.loads(json.dumps(spec.to_dict(spec.prepare()[0])))  # what a resume will give
            assert answered[run_id] and ledger.done_keys(run_id) == answered[run_id]
        units = ledger.units(SAG_RUNS[0]).set_index("unit_key")
        assert units.loc["not-yet", "state"] == "failed" and units.loc["not-yet", "message"] == (
            "the model server is down")
        assert ledger.run(SAG_RUNS[0]).failed == 1


def test_training_runs_are_listed_with_their_steps(tmp_path: Path) -> None:
    settings = {"lr": 0.001, "steps": 3, "letters": ["A", "B"]}
    with TrainingStore(tmp_path / "t.duckdb") as store:
        store.start_run("train-1", kind="letters", method="grpo", base_model="tiny", settings=settings,
                        data_name="medqa", data_hash="abc", n_train=10)
        for step in (1, 2, 3):
            store.add_step("train-1", StepRow(step, 0.5, 0.1, 0.2, 0.0, 0.0, 4, 100, 1.0))
        store.finish("train-1", "stopped")
        ledger = Ledger(store)
        run = ledger.run("train-1")
        assert (run.kind, run.status) == ("training", "stopped")
        assert run.revision == (None if git_revision() == "unknown" else git_revision())  # started through the ledger
        assert run.spec == {"kind": "letters", "method": "grpo", "base_model": "tiny", "settings": settings,
                            "data_hash": "abc"}
        assert ledger.done_keys("train-1") == {"step 1", "step 2", "step 3"}


def test_each_run_is_copied_once_and_a_second_open_adds_nothing(dcem_store: Path, sag_store: Path) -> None:
    with TrainingStore(dcem_store) as store:
        store.start_run("train-1", kind="letters", method="grpo", base_model="tiny", settings={},
                        data_name="d", data_hash="h", n_train=1)
        store.add_step("train-1", StepRow(1, 0.5, 0.1, 0.2, 0.0, 0.0, 4, 100, 1.0))
    with Store(dcem_store) as store:
        first = Ledger(store)
        assert set(first.runs().kind) == {"synthetic", "clinical", "training"}
        snapshot = _snapshot(store)
        assert adopt_old_runs(store.con) == {"runs": 0, "train_runs": 0, "cells": 0, "cell_failures": 0,
                                             "train_steps": 0}
    with Store(dcem_store) as store:
        assert _snapshot(store) == snapshot
        Ledger(store)
        assert _snapshot(store) == snapshot  # a second open adds nothing
    with SagStore(sag_store) as store:
        Ledger(store)
        snapshot = _snapshot(store)
        assert set(Ledger(store).runs().run_id) == set(SAG_RUNS)
        assert adopt_old_runs(store.con) == {"sag_runs": 0, "sag_outcomes": 0, "sag_failures": 0}
        assert _snapshot(store) == snapshot


def test_a_store_without_old_tables_gets_an_empty_ledger(tmp_path: Path) -> None:
    with Database(tmp_path / "new.duckdb") as store:
        ledger = Ledger(store)
        assert ledger.runs().empty and adopt_old_runs(store.con) == {}


def test_a_run_the_ledger_holds_keeps_its_row(tmp_path: Path) -> None:
    """A run started through the ledger and also written to an old table (a kind part-way
    migrated) keeps the ledger's row: the copy fills gaps, it never overwrites."""
    with Store(tmp_path / "s.duckdb") as store:
        ledger = Ledger(store, revision=lambda: "r")
        ledger.start("grid-1", "synthetic", {"given": "through the ledger"})
        store.ensure_run("grid-1", kind="synthetic", spec={"other": 1}, config=MediatorConfig(), seeds=[0])
        Ledger(store)
        assert ledger.run("grid-1").spec == {"given": "through the ledger"}


def test_a_run_finished_in_its_kinds_table_after_it_was_adopted_is_finished_in_the_ledger(tmp_path: Path) -> None:
    """Until a kind writes the ledger itself, the ledger follows its table's status: a run
    adopted while running shows finished after the kind finishes it (and a finished run is
    not set back to running by a stale table)."""
    with Store(tmp_path / "s.duckdb") as store:
        store.ensure_run("grid-2", kind="synthetic", spec={"scenarios": ["S1"]}, config=MediatorConfig(), seeds=[0])
        assert Ledger(store).run("grid-2").status == "running"
        store.con.execute("UPDATE runs SET status = 'finished', finished_at = now() WHERE run_id = 'grid-2'")  # as code before the ledger did
        run = Ledger(store).run("grid-2")
        assert run.status == "finished" and run.finished_at is not None
        before = _snapshot(store)
        assert Ledger(store).run("grid-2").status == "finished" and _snapshot(store) == before
        store.con.execute("UPDATE runs SET status = 'running', finished_at = NULL WHERE run_id = 'grid-2'")
        assert Ledger(store).run("grid-2").status == "finished"
