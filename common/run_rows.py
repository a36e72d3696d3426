"""The rows of chosen runs, read from a store for an export (a store module: all SQL here).

:func:`copy_run_rows` writes, for the runs ``run_ids`` of a store, the ledger's rows of
them and every row of the given tables that belongs to them (``run_id`` among them, or the
kind's ``linked`` condition on a row ``r``) as ``<table>.parquet`` files, zstd-compressed,
each in its primary key's order so the same rows always give the same file.  A table the
store lacks, or that holds no row of the runs, is left out (the ledger's two tables are
always written).  The run ids reach DuckDB registered as a table, never pasted into SQL.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from common.db import Database
from common.export_schema import quote
from common.table_export import copy_query

__all__ = ["LEDGER_TABLES", "copy_run_rows", "table_names"]

LEDGER_TABLES = ("ledger_runs", "ledger_units")
_CHOSEN = "_export_run_ids"
_RUNS = f"SELECT run_id FROM {_CHOSEN}"


def table_names(store: Database) -> set[str]:
    """The tables of the store's main schema."""
    return {str(t) for (t,) in store.con.cursor().execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()}


def _key(cur: Any, table: str) -> list[str]:
    """The table's primary key columns (all its columns when it has none), in order."""
    row = cur.execute("SELECT constraint_column_names FROM duckdb_constraints() WHERE schema_name = 'main' "
                      "AND table_name = ? AND constraint_type = 'PRIMARY KEY'", [table]).fetchone()
    if row:
        return [str(c) for c in row[0]]
    return [str(c) for (c,) in cur.execute("SELECT column_name FROM information_schema.columns WHERE "
                                           "table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
                                           [table]).fetchall()]


def copy_run_rows(store: Database, run_ids: Sequence[str], tables: Sequence[str], linked: Mapping[str, str],
                  folder: Path, *, level: int = 19) -> list[dict[str, Any]]:
    """Write the rows of ``run_ids`` (see the module docstring); their manifest entries."""
    cur = store.con.cursor()
    try:
        cur.register(_CHOSEN, pd.DataFrame({"run_id": pd.Series(list(run_ids), dtype="object")}))
        present = table_names(store)
        wanted = [(t, f"r.run_id IN ({_RUNS})") for t in (*LEDGER_TABLES, *tables)]
        wanted += [(t, cond.replace("{runs}", _RUNS)) for t, cond in linked.items()]
        files = []
        for table, cond in dict(wanted).items():
            if table not in present:
                continue
            order = ", ".join(f"r.{quote(c)}" for c in _key(cur, table))
            query = f"SELECT r.* FROM {quote(table)} r WHERE {cond} ORDER BY {order}"  # noqa: S608 (declared names)
            if table in LEDGER_TABLES or cur.execute(f"SELECT count(*) FROM ({query})").fetchone()[0]:  # noqa: S608
                files.append(copy_query(cur, query, folder, table, level=level))
        return files
    finally:
        cur.close()
