"""The lock file beside each store (common.file_hold): held from open to close, shared
within a process, exclusive across processes for writers, and no write lost when several
processes take turns on one file."""
from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import duckdb
import pytest

from common import file_hold
from common.db import Database, StoreBusyError, open_held
from common.file_hold import hold, lock_path
from tests.common import hold_workers
from tests.spawn_support import run_workers


def _key(path: Path) -> str:
    return str(lock_path(path.resolve()))


def _other_process_takes(spawn: Any, path: Path, *, shared: bool = False) -> str:
    out = spawn.Queue()
    proc = spawn.Process(target=hold_workers.try_hold, args=(str(path), shared, out))
    proc.start()
    try:
        return str(out.get(timeout=60))
    finally:
        proc.join(timeout=60)


def test_an_open_store_holds_its_lock_file_until_it_is_closed(tmp_path: Path, spawn: Any) -> None:
    path = tmp_path / "s.duckdb"
    db = Database(path)
    assert lock_path(path).is_file()
    assert _other_process_takes(spawn, path) == "busy"
    assert _other_process_takes(spawn, path, shared=True) == "busy"  # no reader beside a writer
    db.close()
    assert _other_process_takes(spawn, path) == "held"


def test_readers_share_the_lock_and_keep_a_writer_out(tmp_path: Path, spawn: Any) -> None:
    path = tmp_path / "r.duckdb"
    Database(path).close()
    reader = Database(path, read_only=True)
    assert _other_process_takes(spawn, path, shared=True) == "held"
    assert _other_process_takes(spawn, path, shared=False) == "busy"
    reader.close()
    assert _other_process_takes(spawn, path, shared=False) == "held"


def test_opens_within_one_process_share_one_lock_and_the_last_close_releases_it(tmp_path: Path,
                                                                                spawn: Any) -> None:
    path = tmp_path / "p.duckdb"
    first, second = Database(path), Database(path)
    view = first.session()
    view.close()  # a session view closes its cursor only
    first.close()
    assert _other_process_takes(spawn, path) == "busy"  # the second still holds it
    second.con.execute("CREATE TABLE t (x INTEGER)")  # and still works
    second.close()
    assert _other_process_takes(spawn, path) == "held"
    assert _key(path) not in file_hold._HELD


def test_a_store_never_closed_releases_its_lock_when_collected(tmp_path: Path, spawn: Any) -> None:
    path = tmp_path / "g.duckdb"
    db = Database(path)
    db.con.close()
    del db
    gc.collect()
    assert _other_process_takes(spawn, path) == "held"


def test_a_held_lock_file_makes_the_open_say_the_store_is_in_use(tmp_path: Path) -> None:
    path = tmp_path / "b.duckdb"
    Database(path).close()
    import fcntl
    import os
    fd = os.open(lock_path(path), os.O_RDWR)  # another open file description: like another process
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(StoreBusyError, match=r"the store b\.duckdb is in use by another program"):
            Database(path)
        assert _key(path) not in file_hold._HELD  # the refused open took nothing
    finally:
        os.close(fd)
    Database(path).close()


def test_in_memory_stores_take_no_lock_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    first, second = Database(":memory:"), Database(":memory:")  # two workers of one process
    first.close()
    second.close()
    assert list(tmp_path.iterdir()) == []


def test_a_failed_duckdb_open_gives_the_lock_back(tmp_path: Path) -> None:
    path = tmp_path / "junk.duckdb"
    path.write_bytes(b"not a database" * 100)
    with pytest.raises(Exception):
        open_held(path, read_only=False)
    assert _key(path) not in file_hold._HELD


def test_a_store_whose_lock_file_cannot_be_made_still_opens(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A store in a folder this user cannot write (a shipped read-only copy): DuckDB's own
    lock remains and the store opens."""
    path = tmp_path / "s.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t AS SELECT 1 AS x")
    con.close()
    real_open = file_hold.os.open

    def refuse(name: str, *args: Any) -> int:
        if name.endswith(".lock"):
            raise PermissionError(13, "Permission denied", name)
        return real_open(name, *args)

    monkeypatch.setattr(file_hold.os, "open", refuse)
    with Database(path, read_only=True) as db:
        assert db.con.execute("SELECT x FROM t").fetchone() == (1,)
        assert _key(path) not in file_hold._HELD
    assert not lock_path(path).exists()


def test_the_lock_is_exclusive_within_the_process_only_through_the_registry(tmp_path: Path) -> None:
    path = tmp_path / "h.duckdb"
    a = hold(path, shared=False)
    b = hold(path, shared=False)  # the same process: shared, counted
    assert file_hold._HELD[_key(path)].count == 2
    a.release()
    a.release()  # a second release of one share does nothing
    assert file_hold._HELD[_key(path)].count == 1
    b.release()
    assert _key(path) not in file_hold._HELD


def test_four_processes_taking_turns_lose_no_write(tmp_path: Path, spawn: Any) -> None:
    """Without the lock file, DuckDB lost rows in 11 of 40 such rounds on two busy cores;
    with it, none in 40 (three rounds here)."""
    n, workers = 40, 4
    for round_ in range(3):
        path = tmp_path / f"turns{round_}.duckdb"
        with Database(path) as db:
            db.con.execute("CREATE TABLE t (who INTEGER, i INTEGER)")
        results = run_workers(spawn, hold_workers.writer, [(str(path), w, n) for w in range(workers)],
                              timeout=300)
        assert [r[2] for r in results] == [None] * workers, results
        assert sum(r[1] for r in results) > 0  # they did take turns
        with Database(path, read_only=True) as db:
            rows = db.con.execute("SELECT who, i FROM t").fetchall()
        assert sorted(rows) == [(w, i) for w in range(workers) for i in range(n)]
