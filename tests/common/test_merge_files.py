"""Merging refuses a file that is not a DuckDB store before DuckDB opens it: a SQLite file
never makes DuckDB look for (or download) its SQLite reader, and empty, short, foreign or
truncated files end in one clear line with the target unchanged."""
from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import duckdb
import pytest

from common.db import Database, StoreError
from common.store_merge import merge_store, require_duckdb_file
from dcem.store.database import Store
from dcem.store.merge_checks import DCEM_CHECKS
from dcem_clinical.cli import main as clinical_main
from runtime.call_log import CallLog
from runtime.merge_checks import call_log_checks
from tests.sag.merge_stores import dump

CHECKS = (*DCEM_CHECKS, *call_log_checks(("runs",)))


@pytest.fixture()
def target(tmp_path: Path) -> Path:
    path = tmp_path / "target.duckdb"
    with Store(path) as store:
        CallLog(store)
    return path


def _sqlite(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    con.execute("INSERT INTO schema_migrations VALUES ('dcem/001', '2026-01-01')")
    con.commit()
    con.close()
    return path


def test_a_store_the_project_writes_has_duckdbs_magic_at_offset_8(target: Path) -> None:
    head = target.read_bytes()[:12]
    assert head[8:12] == b"DUCK"
    require_duckdb_file(target, "the source")  # no error


@pytest.mark.parametrize("make, reason", [
    (lambda p: _sqlite(p), "it is a SQLite database"),
    (lambda p: p.write_bytes(b""), "it is empty"),
    (lambda p: p.write_bytes(b"DUCK"), "it holds only 4 bytes"),
    (lambda p: p.write_bytes(os.urandom(8) + b"DUCX" + os.urandom(4000)), "its header lacks DuckDB's magic bytes"),
    (lambda p: p.write_bytes(b"SQLite format 3\x00" + bytes(4080)), "it is a SQLite database"),
])
def test_a_file_that_is_not_a_duckdb_store_is_refused_before_duckdb_opens_it(make: object, reason: str,
                                                                            target: Path, tmp_path: Path) -> None:
    source = tmp_path / "part.duckdb"
    make(source)  # type: ignore[operator]
    before = dump(target)
    with Database(target) as db:
        with pytest.raises(StoreError, match=f"part.duckdb is not a DuckDB store file \\({reason}"):
            merge_store(db, source, CHECKS)
        loaded = db.con.execute("SELECT count(*) FROM duckdb_extensions() WHERE extension_name = 'sqlite_scanner' "
                                "AND loaded").fetchone()[0]
    assert loaded == 0 and dump(target) == before


def test_a_truncated_store_is_refused_in_one_line_with_the_target_unchanged(clinical_db: Path, target: Path,
                                                                         tmp_path: Path) -> None:
    source = tmp_path / "part.duckdb"
    source.write_bytes(clinical_db.read_bytes()[:20_000])
    before = dump(target)
    with Database(target) as db, pytest.raises(StoreError, match="cannot read part.duckdb as a store") as info:
        merge_store(db, source, CHECKS)
    assert "\n" not in str(info.value) and dump(target) == before


def test_the_command_line_refuses_a_sqlite_source_or_target_in_one_line(clinical_db: Path, target: Path,
                                                                        tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    lite = _sqlite(tmp_path / "lite.db")
    part = tmp_path / "part.duckdb"
    shutil.copy(clinical_db, part)
    assert clinical_main(["merge", str(lite), "--db", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: the source lite.db is not a DuckDB store file")
    assert clinical_main(["merge", str(part), "--db", str(lite)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: the target lite.db is not a DuckDB store file")
    con = sqlite3.connect(lite)
    assert con.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == 1
    con.close()
    assert duckdb.connect(str(target), read_only=True).execute("SELECT count(*) FROM runs").fetchone()[0] == 0
