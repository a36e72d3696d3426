"""Test helper: run SQL statements on a store file directly (to damage a copy of a store)."""
from __future__ import annotations

from pathlib import Path

import duckdb

__all__ = ["run_sql"]


def run_sql(path: Path, *statements: str) -> None:
    con = duckdb.connect(str(path))
    try:
        for sql in statements:
            con.execute(sql)
    finally:
        con.close()
