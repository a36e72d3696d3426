"""Thread-safe short reads and write transactions on a :class:`~common.db.Database`.

DuckDB keeps one database instance per file per process: every ``duckdb.connect(path)``
in the process (every :class:`Store` on that file) shares it, so two dashboard sessions
can write at the same time, but one connection object must never be used from two
threads at once.  The pattern used here, for code that may run in several sessions of
one server process (reviews, presets):

* every call opens its own cursor, ``store.con.cursor()`` -- a separate connection to the
  same database instance -- and closes it when done, so it never shares a connection
  with another thread even when the sessions share one :class:`Store`;
* a write runs inside ``BEGIN TRANSACTION ... COMMIT`` on that cursor (all or nothing);
  when DuckDB reports a transaction conflict the whole unit of work is retried a few
  times with a short back-off.

A read-only :class:`Store` cannot coexist in one process with a read-write one on the
same file (DuckDB refuses a second configuration), so the dashboard should open the
store read-write once per process and hand sessions cursors as above.
"""
from __future__ import annotations

import contextlib
import time
from typing import Callable, Iterator, TypeVar

import duckdb

from common.db import Database, StoreError

__all__ = ["cursor", "run_in_transaction", "RETRIES"]

T = TypeVar("T")
RETRIES = 5
_BACKOFF_S = 0.01


@contextlib.contextmanager
def cursor(store: Database) -> Iterator[duckdb.DuckDBPyConnection]:
    """A private connection to the store's database for the duration of a block.

    A missing table (a store last opened by an older version, read-only since) becomes a
    :class:`StoreError` that says how to upgrade it.
    """
    try:
        cur = store.con.cursor()
    except duckdb.Error as exc:
        raise StoreError(f"cannot use the store {store.path}: {exc}") from None
    try:
        yield cur
    except duckdb.CatalogException as exc:
        raise StoreError(f"the store {store.path} predates this feature ({exc}); open it once "
                         "read-write (for example with `python -m dcem runs`) to upgrade it") from None
    finally:
        cur.close()


def run_in_transaction(store: Database, work: Callable[[duckdb.DuckDBPyConnection], T], *,
                       retries: int = RETRIES) -> T:
    """Run ``work(cursor)`` in its own transaction on its own cursor and return its value.

    The transaction commits when ``work`` returns and rolls back when it raises (the
    exception propagates).  A DuckDB transaction conflict retries ``work`` from the start,
    up to ``retries`` times, then raises :class:`StoreError`.
    """
    for attempt in range(retries + 1):
        with cursor(store) as cur:
            cur.execute("BEGIN TRANSACTION")
            try:
                value = work(cur)
                cur.execute("COMMIT")
                return value
            except duckdb.TransactionException as exc:
                _rollback(cur)
                if attempt == retries:
                    raise StoreError(f"the store is busy, please try again ({exc})") from None
            except BaseException:
                _rollback(cur)
                raise
        time.sleep(_BACKOFF_S * (attempt + 1))
    raise AssertionError("unreachable")  # pragma: no cover


def _rollback(cur: duckdb.DuckDBPyConnection) -> None:
    try:
        cur.execute("ROLLBACK")
    except duckdb.Error:
        pass  # a failed COMMIT has already ended the transaction
