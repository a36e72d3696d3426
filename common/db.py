"""Opening the project's DuckDB file.

The file defaults to ``data/dcem.duckdb`` in the project, is overridden by the
environment variable ``DCEM_DB`` and by an explicit path.  DuckDB allows one writing
process per file; when another program holds it, opening raises :class:`StoreBusyError`
with one line saying so.

A missing file is created (with its folder) only when the store is opened for writing
with ``create`` left on; ``create=False`` refuses it with one line.

Short writes from several processes (two reviewers, each opening the store for one review
and closing it again) take turns: :func:`retry_busy` repeats the whole open-and-write while
the file is held elsewhere, with jittered exponential back-off for at most
:data:`BUSY_TIMEOUT_S` seconds in total, then gives up with a message saying how long it
waited.  :meth:`Database.open_retrying` does the same for opening alone.

Every open also holds the store's lock file (:mod:`common.file_hold`) until the store is
closed, because DuckDB's own lock lets a write vanish when processes take turns quickly.
"""
from __future__ import annotations

import os
import random
import subprocess
import time
import weakref
from pathlib import Path
from typing import Any, Callable, Self, Sequence, TypeVar

import duckdb

from common.errors import ProjectError
from common.export_schema import parquet_columns as _parquet_columns
from common.export_schema import quote, select_sql
from common.file_hold import HeldElsewhere, Hold, hold

__all__ = ["Database", "StoreError", "StoreBusyError", "default_db_path", "git_revision", "PROJECT_ROOT",
           "retry_busy", "BUSY_TIMEOUT_S", "connect", "open_held"]

PROJECT_ROOT = Path(__file__).resolve().parents[1]
BUSY_TIMEOUT_S = 10.0  # how long a short write waits for another process to release the file
_FIRST_DELAY_S = 0.01
_MAX_DELAY_S = 0.25

T = TypeVar("T")


class StoreError(ProjectError):
    """The store cannot be opened, is busy, or holds no such record."""


class StoreBusyError(StoreError):
    """Another process holds the store file (DuckDB allows one writing process per file)."""


def retry_busy(work: Callable[[], T], *, timeout: float = BUSY_TIMEOUT_S) -> T:
    """``work()``, repeated while it raises :class:`StoreBusyError`, for at most ``timeout`` s.

    ``work`` must open the store itself (and close it), so each attempt starts afresh,
    and must be safe to repeat (a write that committed never raises StoreBusyError, since
    the lock is taken when the file is opened).  Waits grow from 10 ms, doubling up to
    250 ms, each drawn uniformly from its upper half (jitter, so two waiting processes do
    not wake together).  When the time is up the last StoreBusyError is raised again with
    the number of attempts and the time waited.
    """
    start = time.monotonic()
    delay, attempts = _FIRST_DELAY_S, 0
    while True:
        attempts += 1
        try:
            return work()
        except StoreBusyError as exc:
            waited = time.monotonic() - start
            if waited >= timeout:
                raise StoreBusyError(f"{exc} (still in use after {attempts} attempts over {waited:.1f} s)"
                                     ) from None
            time.sleep(min(timeout - waited, random.uniform(delay / 2, delay)))
            delay = min(2 * delay, _MAX_DELAY_S)


def default_db_path() -> Path:
    """``$DCEM_DB`` if set, else ``data/dcem.duckdb`` in the project directory."""
    env = os.environ.get("DCEM_DB")
    return Path(env) if env else PROJECT_ROOT / "data" / "dcem.duckdb"


def git_revision() -> str:
    """The project's current git commit, or ``"unknown"`` outside a checkout."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def connect(path: Path, *, read_only: bool, create: bool = True) -> duckdb.DuckDBPyConnection:
    """A bare connection to ``path`` (no lock file: stores open through :class:`Database`
    or :func:`open_held`); a file held by another process becomes a clear StoreError.

    Only a writable connection with ``create`` makes a missing file (and its folder); a
    command that only reads passes ``create=False`` and gets a StoreError instead (a
    read-only connection never creates one either).
    """
    _prepare(path, read_only=read_only, create=create)
    try:
        return duckdb.connect(str(path), read_only=read_only)
    except duckdb.Error as exc:
        if read_only and "different configuration" in str(exc):
            # This process already holds the file open for writing (a page's cached store);
            # DuckDB allows one mode per file and process, and reading through it is safe.
            return _connect_again(path)
        if "lock" in str(exc).lower():
            raise _busy(path) from None
        raise StoreError(f"cannot open the store {path}: {exc}") from None


def _prepare(path: Path, *, read_only: bool, create: bool) -> None:
    """Refuse a missing file unless it may be created; make a writer's folder."""
    if not create and not path.is_file():
        raise StoreError(f"no store file {path}; name an existing store with --db (or DCEM_DB)")
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)


def _busy(path: Path) -> StoreBusyError:
    return StoreBusyError(
        f"the store {path.name} is in use by another program (a running dashboard or "
        "experiment); wait for it to finish, run the experiment from the dashboard's "
        "Experiments page, or use another file with --db / DCEM_DB")


def open_held(path: Path, *, read_only: bool, create: bool = True) -> tuple[duckdb.DuckDBPyConnection, Hold]:
    """:func:`connect` under the store's lock file (:mod:`common.file_hold`), taken first
    and returned with the connection: release it after closing the connection."""
    _prepare(path, read_only=read_only, create=create)  # before the lock file is made beside it
    try:
        held = Hold(None) if str(path).startswith(":memory:") else hold(path, shared=read_only)
    except HeldElsewhere:
        raise _busy(path) from None
    try:
        return connect(path, read_only=read_only, create=create), held
    except BaseException:
        held.release()
        raise


def _connect_again(path: Path) -> duckdb.DuckDBPyConnection:
    """A second connection to a file this process already holds open for writing."""
    try:
        return duckdb.connect(str(path), read_only=False)
    except duckdb.Error as exc:
        raise StoreError(f"cannot open the store {path}: {exc}") from None


class Database:
    """A connection to the project's DuckDB file; use as a context manager.

    Subclasses add their package's tables by applying its migrations on open (see
    :func:`common.migrations.migrate`); ``con`` is the DuckDB connection.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, read_only: bool = False,
                 create: bool = True) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self.read_only = read_only
        self.con, held = open_held(self.path, read_only=read_only, create=create)
        self._release = weakref.finalize(self, held.release)  # also when never closed

    @classmethod
    def open_retrying(cls, path: str | os.PathLike[str] | None = None, *, timeout: float = BUSY_TIMEOUT_S,
                      **kwargs: Any) -> Self:
        """Open like the constructor, waiting (see :func:`retry_busy`) while another
        process holds the file; :class:`StoreBusyError` after ``timeout`` seconds."""
        return retry_busy(lambda: cls(path, **kwargs), timeout=timeout)

    def session(self) -> "Database":
        """A view of the same database on its own cursor, for use from another thread.

        DuckDB connections are not shared between threads; a cursor is a separate
        connection to the same database instance, so sessions of one server process
        can read and write concurrently without reopening the file.
        """
        view = object.__new__(type(self))
        view.__dict__.update(self.__dict__)
        view.con = self.con.cursor()
        view._release = weakref.finalize(view, lambda: None)  # the store's lock stays with the store
        return view

    # ------------------------------------------------ generic reads and loads of any store
    def migration_names(self) -> list[str]:
        """The recorded names (``package/name``) of the migrations applied, sorted (a plain
        read: a read-only store is not given a ``schema_migrations`` table)."""
        return sorted(str(m) for (m,) in self.con.cursor().execute("SELECT name FROM schema_migrations").fetchall())

    def table_schemas(self) -> dict[str, tuple[tuple[tuple[str, str], ...], frozenset[str]]]:
        """Each table of the main schema: its (column, DuckDB type) in order, and the
        columns a row may lack (those that may be empty or have a default)."""
        out: dict[str, tuple[list[tuple[str, str]], set[str]]] = {}
        for table, column, dtype, nullable, default in self.con.cursor().execute(
                "SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns "
                "WHERE table_schema = 'main' ORDER BY table_name, ordinal_position").fetchall():
            columns, optional = out.setdefault(str(table), ([], set()))
            columns.append((str(column), str(dtype)))
            if nullable == "YES" or default is not None:
                optional.add(str(column))
        return {t: (tuple(c), frozenset(o)) for t, (c, o) in out.items()}

    def parquet_columns(self, path: Path, label: str) -> list[tuple[str, str]]:
        """(column, DuckDB type) of the Parquet file ``path`` (:func:`common.export_schema.parquet_columns`)."""
        return _parquet_columns(self.con, path, label)

    def insert_parquet(self, table: str, path: Path, found: Sequence[tuple[str, str]],
                       want: Sequence[tuple[str, str]]) -> None:
        """Append the rows of the Parquet file ``path`` (its columns ``found``, checked
        against ``want``, the table's) to ``table``: each column the file has, cast to its
        declared type; the path a bound parameter.  DuckDB's error when a value does not fit."""
        columns = ", ".join(quote(c) for c, _ in want if c in dict(found))
        self.con.execute(f"INSERT INTO {quote(table)} ({columns}) "  # noqa: S608 (checked names)
                         f"{select_sql(found, tuple(want), fill=False)}", [str(path)])

    def row_count(self, table: str) -> int:
        """Rows of ``table``."""
        return int(self.con.execute(f"SELECT count(*) FROM {quote(table)}").fetchone()[0])  # noqa: S608

    def close(self) -> None:
        """Close the connection, then release the lock file (DuckDB has finished with the file)."""
        try:
            self.con.close()
        finally:
            self._release()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
