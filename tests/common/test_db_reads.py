"""Database's generic reads and loads: migrations, table schemas, a checked Parquet file appended."""
from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from common.db import Database
from common.errors import InputError
from tests.common.sql_files import run_sql


def test_schemas_migrations_and_a_parquet_file_appended(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    run_sql(path, "CREATE TABLE schema_migrations (name VARCHAR PRIMARY KEY, applied_at TIMESTAMP NOT NULL)",
            "INSERT INTO schema_migrations VALUES ('x/002_b', now()), ('x/001_a', now())",
            "CREATE TABLE t (id VARCHAR NOT NULL, n INTEGER NOT NULL, note VARCHAR, k INTEGER NOT NULL DEFAULT 3)")
    parquet = tmp_path / "t.parquet"
    with duckdb.connect() as con:
        con.execute("COPY (SELECT 'a' AS id, 7::BIGINT AS n UNION ALL SELECT 'b', 8) TO ? (FORMAT PARQUET)",
                    [str(parquet)])
    with Database(path, read_only=True) as db:
        assert db.migration_names() == ["x/001_a", "x/002_b"]
    with Database(path) as db:
        schemas = db.table_schemas()
        want, may_lack = schemas["t"]
        assert want == (("id", "VARCHAR"), ("n", "INTEGER"), ("note", "VARCHAR"), ("k", "INTEGER"))
        assert may_lack == {"note", "k"} and "schema_migrations" in schemas
        found = db.parquet_columns(parquet, "t.parquet")
        assert found == [("id", "VARCHAR"), ("n", "BIGINT")]
        db.insert_parquet("t", parquet, found, want)  # each column cast to its declared type, the rest default
        assert db.row_count("t") == 2
        assert db.con.execute("SELECT id, n, note, k FROM t ORDER BY id").fetchall() == [("a", 7, None, 3),
                                                                                     ("b", 8, None, 3)]
        with pytest.raises(InputError, match="nothing.parquet cannot be read"):
            db.parquet_columns(tmp_path / "nothing.parquet", "nothing.parquet")
        with pytest.raises(duckdb.Error):  # 'a' is no integer: DuckDB's own error, for the caller to word
            db.insert_parquet("t", parquet, [("id", "VARCHAR"), ("n", "BIGINT")], (("n", "VARCHAR"), ("id", "INTEGER")))
        assert db.row_count("t") == 2
