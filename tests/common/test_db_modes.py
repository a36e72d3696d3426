"""A file this process already holds open for writing can still be read by a read-only opener."""
from __future__ import annotations

from pathlib import Path

from common.db import connect


def test_a_read_only_open_of_a_file_held_for_writing_reads_through_it(tmp_path: Path) -> None:
    path = tmp_path / "held.duckdb"
    writer = connect(path, read_only=False)
    writer.execute("CREATE TABLE t (x INTEGER)")
    writer.execute("INSERT INTO t VALUES (7)")
    reader = connect(path, read_only=True)  # DuckDB refuses a second mode in one process
    assert reader.execute("SELECT x FROM t").fetchone() == (7,)
    reader.close()
    writer.execute("INSERT INTO t VALUES (8)")  # the writer is untouched
    assert writer.execute("SELECT count(*) FROM t").fetchone() == (2,)
    writer.close()
