"""Merging one store file into another: rows the target lacks are copied, in one
transaction; rows both hold are left alone; mismatched or busy files are refused."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import common.store_merge as store_merge
from common.db import Database, StoreBusyError, StoreError
from common.store_merge import merge_store as merge_with
from dcem.cli import main as dcem_main
from dcem.store.database import Store
from dcem.store.merge_checks import DCEM_CHECKS
from dcem_clinical.cli import main as clinical_main
from runtime.call_log import CallLog
from runtime.merge_checks import call_log_checks

CHECKS = (*DCEM_CHECKS, *call_log_checks(("runs",)))


def merge_store(db: Database, source: Path) -> store_merge.MergeReport:
    """Merge with the rules of a clinical store's tables (D-CEM's and the call log's)."""
    return merge_with(db, source, CHECKS)


def _counts(path: Path) -> dict[str, int]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                            "WHERE table_schema = 'main'").fetchall()]
        return {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
    finally:
        con.close()


@pytest.fixture()
def source(clinical_db: Path, tmp_path: Path) -> Path:
    """A copy of the shared clinical test store (a synthetic and a clinical run, a call log)."""
    path = tmp_path / "part.duckdb"
    shutil.copy(clinical_db, path)
    return path


@pytest.fixture()
def empty_store(tmp_path: Path) -> Path:
    path = tmp_path / "target.duckdb"
    with Store(path) as store:  # every table of a clinical store, no row
        CallLog(store)
    return path


def test_a_store_merged_into_an_empty_one_brings_every_row_and_again_nothing(source: Path,
                                                                            empty_store: Path) -> None:
    with Database(empty_store) as db:
        first = merge_store(db, source)
        again = merge_store(db, source)
    expected = {t: n for t, n in _counts(source).items() if t != "schema_migrations"}
    assert _counts(empty_store) | {"schema_migrations": 0} == expected | {"schema_migrations": 0}
    assert first.added == sum(expected.values()) > 0 and first.differing == 0
    assert again.added == 0 and all(t.present == expected[t.table] for t in again.tables)
    assert first.lines()[-1] == f"{first.added} rows added from part.duckdb"


def test_rows_both_files_hold_are_kept_as_the_target_has_them_and_counted(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "main.duckdb"
    shutil.copy(source, target)
    con = duckdb.connect(str(source))
    run_id = con.execute("SELECT run_id FROM runs ORDER BY run_id LIMIT 1").fetchone()[0]
    con.execute("UPDATE runs SET status = 'changed elsewhere' WHERE run_id = ?", [run_id])
    con.execute("DELETE FROM metrics WHERE run_id = ?", [run_id])
    con.close()
    with Database(target) as db:
        report = merge_store(db, source)
    runs = next(t for t in report.tables if t.table == "runs")
    assert (runs.added, runs.differing) == (0, 1) and report.added == 0 and report.differing == 1
    assert "1 row differ and were left as they were" in report.lines()[-1]
    con = duckdb.connect(str(target), read_only=True)
    assert con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchone()[0] != "changed elsewhere"
    con.close()


@pytest.mark.parametrize("target_status, source_status, kept", [
    ("running", "finished", "finished"),  # a copy taken before the run ended, merged back
    ("finished", "running", "finished"),  # a resume that stopped early does not undo the finish
    ("running", "interrupted", "running"),  # neither finished: the target's row stays
])
def test_a_run_finished_in_either_file_is_finished_after_merging(target_status: str, source_status: str, kept: str,
                                                                 source: Path, tmp_path: Path) -> None:
    target = tmp_path / "main.duckdb"
    shutil.copy(source, target)
    for path, status in ((target, target_status), (source, source_status)):
        con = duckdb.connect(str(path))
        con.execute("UPDATE runs SET status = ?", [status])
        con.close()
    with Database(target) as db:
        report = merge_store(db, source)
        again = merge_store(db, source)
    runs = next(t for t in report.tables if t.table == "runs")
    replaced = runs.present if kept == source_status != target_status else 0
    assert runs.present > 0 and (runs.replaced, runs.differing) == (replaced, runs.present - replaced)
    assert again.replaced == 0
    if replaced:
        assert f"{replaced} replaced: finished in the source" in "\n".join(report.lines())
    con = duckdb.connect(str(target), read_only=True)
    assert {r[0] for r in con.execute("SELECT status FROM runs").fetchall()} == {kept}
    con.close()


def test_a_failure_half_way_leaves_the_target_unchanged(source: Path, empty_store: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    real, seen = store_merge._merge_table, []

    def failing(cur: duckdb.DuckDBPyConnection, step: store_merge._Step) -> store_merge.TableMerge:
        if seen:
            raise duckdb.IOException("disk full")
        seen.append(step.table)
        return real(cur, step)

    monkeypatch.setattr(store_merge, "_merge_table", failing)
    with Database(empty_store) as db, pytest.raises(StoreError, match="nothing was changed: .*disk full"):
        merge_store(db, source)
    assert seen and all(n == 0 for t, n in _counts(empty_store).items() if t != "schema_migrations")


def test_a_table_whose_columns_differ_is_refused(source: Path, empty_store: Path) -> None:
    con = duckdb.connect(str(source))
    con.execute("ALTER TABLE cells ADD COLUMN extra INTEGER")
    con.close()
    with Database(empty_store) as db, pytest.raises(StoreError, match="table cells has different columns"):
        merge_store(db, source)
    assert _counts(empty_store)["runs"] == 0


def test_a_source_with_tables_the_target_lacks_is_refused(source: Path, tmp_path: Path) -> None:
    bare = tmp_path / "calls_only.duckdb"
    con = duckdb.connect(str(bare))
    con.execute("CREATE TABLE schema_migrations (name VARCHAR PRIMARY KEY, applied_at TIMESTAMP NOT NULL)")
    con.close()
    with Database(bare) as db, pytest.raises(StoreError, match="has tables the target lacks .*dcem/001"):
        merge_store(db, source)


@pytest.mark.parametrize("content, message", [
    (None, "no store file"),
    (b"not a database", "junk.duckdb is not a DuckDB store file"),
    ("plain", "is not a store of this project"),
])
def test_files_that_are_not_stores_are_refused(content: bytes | str | None, message: str, empty_store: Path,
                                               tmp_path: Path) -> None:
    path = tmp_path / "junk.duckdb"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content == "plain":
        con = duckdb.connect(str(path))
        con.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
        con.close()
    with Database(empty_store) as db, pytest.raises(StoreError, match=message):
        merge_store(db, path)


def test_a_store_is_not_merged_into_itself_nor_into_a_read_only_one(source: Path, empty_store: Path) -> None:
    with Database(source) as db, pytest.raises(StoreError, match="into itself"):
        merge_store(db, source)
    with Database(empty_store, read_only=True) as db, pytest.raises(StoreError, match="read-only"):
        merge_store(db, source)


def test_a_source_another_process_is_writing_is_refused(source: Path, empty_store: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time\n"
                               f"con = duckdb.connect({str(source)!r})\nprint('ready', flush=True)\ntime.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with Database(empty_store) as db, pytest.raises(StoreBusyError, match="in use by another program"):
            merge_store(db, source)
    finally:
        holder.kill()
        holder.wait()
    assert _counts(empty_store)["runs"] == 0


def test_the_command_line_merges_and_reports_bad_input_in_one_line(source: Path, empty_store: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert clinical_main(["merge", str(source), "--db", str(empty_store)]) == 0
    out = capsys.readouterr().out
    assert "  runs: 2 added, 0 already there" in out and out.strip().endswith("rows added from part.duckdb")
    assert clinical_main(["merge", str(source), "--db", str(source.parent / "none.duckdb")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no store file" in err and "copy the first part there" in err
