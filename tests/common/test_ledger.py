"""common.ledger: runs of any kind recorded, resumed only with their spec, units done or failed."""
from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from common.db import Database, StoreError
from common.ledger import Ledger
from common.migrations import applied_migrations
from common.resume import ResumeRefused

SPEC = {"items": 3, "rate": 0.5, "names": ["a", "b"], "nested": {"t_max": 4}}


@pytest.fixture()
def ledger(tmp_path: Path) -> Ledger:
    store = Database(tmp_path / "store.duckdb")
    yield Ledger(store, revision=lambda: "rev1")
    store.close()


def _rows(store: Database) -> list[tuple[object, ...]]:
    cur = store.con.cursor()
    return (cur.execute("SELECT * FROM ledger_runs ORDER BY run_id").fetchall()
            + cur.execute("SELECT * FROM ledger_units ORDER BY run_id, unit_key").fetchall())


def test_a_new_run_is_recorded_and_the_same_spec_resumes_it(ledger: Ledger) -> None:
    assert ledger.start("r1", "toy", SPEC) is False
    run = ledger.run("r1")
    assert (run.kind, run.spec, run.status, run.revision, run.finished_at, run.done, run.failed) == (
        "toy", SPEC, "running", "rev1", None, 0, 0)
    assert applied_migrations(ledger.store.con).count("ledger/001_ledger_runs_units") == 1
    # the same spec (a tuple where the JSON has a list, keys in another order) resumes
    assert ledger.start("r1", "toy", {"nested": {"t_max": 4}, "names": ("a", "b"), "rate": 0.5, "items": 3}) is True


def test_another_spec_or_kind_is_refused_naming_the_field_and_nothing_is_written(ledger: Ledger) -> None:
    ledger.start("r1", "toy", SPEC)
    ledger.mark_failed("r1")
    before = _rows(ledger.store)
    with pytest.raises(ResumeRefused, match=r"nested\.t_max stored 4, given 5; nothing was written") as info:
        ledger.start("r1", "toy", {**SPEC, "nested": {"t_max": 5}})
    assert info.value.field == "nested.t_max"
    with pytest.raises(ResumeRefused, match=r'kind stored "toy", given "grid"'):
        ledger.start("r1", "grid", SPEC)
    with pytest.raises(ResumeRefused, match=r"extra stored \(not set\), given 1"):
        ledger.start("r1", "toy", {**SPEC, "extra": 1})
    assert _rows(ledger.store) == before  # still failed: the refused starts changed nothing


def test_units_done_in_the_kinds_transaction_commit_with_it_or_not_at_all(ledger: Ledger) -> None:
    ledger.store.con.execute("CREATE TABLE toy_rows (run_id VARCHAR, unit_key VARCHAR, value INTEGER)")
    ledger.start("r1", "toy", SPEC)

    def write(cur: duckdb.DuckDBPyConnection, key: str, value: int) -> None:
        cur.execute("INSERT INTO toy_rows VALUES (?, ?, ?)", ["r1", key, value])

    ledger.save_unit("r1", "u1", lambda cur: write(cur, "u1", 1))

    def broken(cur: duckdb.DuckDBPyConnection) -> None:
        write(cur, "u2", 2)
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        ledger.save_unit("r1", "u2", broken)
    assert ledger.done_keys("r1") == {"u1"}
    assert ledger.store.con.execute("SELECT unit_key FROM toy_rows").fetchall() == [("u1",)]


def test_a_failure_keeps_its_latest_message_and_a_done_unit_stays_done(ledger: Ledger) -> None:
    ledger.start("r1", "toy", SPEC)
    ledger.unit_failed("r1", "u1", "first")
    ledger.unit_failed("r1", "u1", "second")
    ledger.unit_failed("r1", "u2", "boom")
    ledger.save_unit("r1", "u2", lambda cur: None)  # stored since it failed: done, no message
    ledger.unit_failed("r1", "u2", "late failure of a stored unit")
    units = ledger.units("r1")
    assert list(units.unit_key) == ["u2", "u1"] and list(units.state) == ["done", "failed"]
    assert units.message.iloc[1] == "second" and units.message.isna().iloc[0]
    assert (ledger.run("r1").done, ledger.run("r1").failed) == (1, 1)


def test_finish_mark_failed_and_a_resume(ledger: Ledger) -> None:
    ledger.start("r1", "toy", SPEC)
    ledger.mark_failed("r1")
    assert ledger.run("r1").status == "failed"
    ledger.start("r1", "toy", SPEC)
    assert ledger.run("r1").status == "running"
    ledger.finish("r1")
    finished = ledger.run("r1")
    assert finished.status == "finished" and finished.finished_at is not None
    ledger.finish("r1")
    assert ledger.run("r1").finished_at == finished.finished_at  # when it first finished
    ledger.mark_failed("r1")  # a finished run stays finished
    ledger.start("r1", "toy", SPEC)
    assert ledger.run("r1").status == "finished"
    with pytest.raises(StoreError, match="no run 'nope'"):
        ledger.finish("nope")
    with pytest.raises(StoreError, match="no run 'nope'"):
        ledger.run("nope")


def test_runs_lists_every_kind_or_one_with_counts(ledger: Ledger) -> None:
    ledger.start("a", "toy", SPEC)
    ledger.start("b", "grid", {"x": 1})
    ledger.save_unit("b", "k", lambda cur: None)
    ledger.unit_failed("b", "j", "no")
    every = ledger.runs()
    assert set(every.run_id) == {"a", "b"}
    only = ledger.runs("grid")
    assert list(only.run_id) == ["b"] and (int(only.done.iloc[0]), int(only.failed.iloc[0])) == (1, 1)
    assert ledger.runs("nothing").empty


def test_an_unknown_revision_is_stored_as_none(tmp_path: Path) -> None:
    with Database(tmp_path / "s.duckdb") as store:
        ledger = Ledger(store, revision=lambda: "unknown")
        ledger.start("r", "toy", {})
        assert ledger.run("r").revision is None


def test_bad_arguments_are_refused_before_anything_is_written(ledger: Ledger) -> None:
    with pytest.raises(ValueError, match="run id"):
        ledger.start("", "toy", SPEC)
    with pytest.raises(ValueError, match="kind"):
        ledger.start("r", "", SPEC)
    with pytest.raises(TypeError, match="mapping"):
        ledger.start("r", "toy", [1, 2])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"holds a PosixPath .*which JSON cannot keep"):
        ledger.start("r", "toy", {"file": Path("a.jsonl")})
    assert ledger.runs().empty


def test_a_read_only_store_without_the_tables_reads_empty(tmp_path: Path) -> None:
    path = tmp_path / "plain.duckdb"
    with Database(path) as store:
        store.con.execute("CREATE TABLE other (x INTEGER)")
    with Database(path, read_only=True) as store:
        ledger = Ledger(store)
        assert ledger.runs().empty and ledger.units("r").empty and ledger.done_keys("r") == set()
        with pytest.raises(StoreError, match="no run 'r'"):
            ledger.run("r")


def test_a_set_in_a_spec_is_kept_sorted_so_it_resumes_in_any_order(ledger: Ledger) -> None:
    ledger.start("r", "toy", {"tags": {"b", "c", "a"}})
    assert ledger.run("r").spec == {"tags": ["a", "b", "c"]}
    assert ledger.start("r", "toy", {"tags": frozenset({"c", "a", "b"})}) is True
