"""What a store file holds, table by table: for tests that a refused command wrote nothing."""
from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb

__all__ = ["store_rows", "rows_of"]


def store_rows(path: Path) -> dict[str, tuple[int, str]]:
    """Every table of the store at ``path``: its row count and a hash of its rows (sorted),
    so two snapshots are equal only when no row was added, removed or changed."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        return rows_of(con)
    finally:
        con.close()


def rows_of(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[int, str]]:
    """:func:`store_rows` through an open connection (a store this process holds open)."""
    names = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables WHERE table_type = "
                                       "'BASE TABLE' ORDER BY table_name").fetchall()]
    found = {}
    for name in names:
        rows = sorted(repr(row) for row in con.table(name).fetchall())
        found[name] = (len(rows), hashlib.sha256("\n".join(rows).encode("utf-8")).hexdigest())
    return found
