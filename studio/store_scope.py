"""The dashboard's hold on the result store: taken when a page run first needs it, given
back when the run ends.

DuckDB lets one process at a time open a file for writing.  A dashboard that kept the
store open for its whole life would lock every other dashboard process (a second reviewer
on another port, a command-line run) out of the file.  So the entry script wraps each
page run in :func:`run_scope`; inside it, :func:`open_for_run` opens the store the first
time a page asks for it (waiting with bounded, jittered back-off while another process
holds the file, :func:`common.db.retry_busy`) and the scope closes it when the run ends,
however the run ends (``st.stop()``, an exception, a rerun).  Each page run is one
thread, so the store it gets needs no cursor of its own.

Outside a scope (a page script run on its own) every call opens a fresh store, released
when the page's run drops it.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator, TypeVar

from common.db import BUSY_TIMEOUT_S, Database

__all__ = ["run_scope", "open_for_run", "open_count"]

D = TypeVar("D", bound=Database)

_local = threading.local()


@contextmanager
def run_scope() -> Iterator[None]:
    """One page run: stores opened in it by :func:`open_for_run` are closed at its end."""
    outer = getattr(_local, "opened", None)
    _local.opened = {}
    try:
        yield
    finally:
        opened, _local.opened = _local.opened, outer
        for db in reversed(list(opened.values())):
            db.close()


def open_for_run(cls: type[D], path: str, *, timeout: float = BUSY_TIMEOUT_S) -> D:
    """The run's ``cls`` store on ``path``, opened on first use (waiting at most
    ``timeout`` s for another process to release the file).  Raises
    :class:`common.db.StoreError` (:class:`~common.db.StoreBusyError` when the file
    stayed held)."""
    opened: dict[tuple[type, str], Database] | None = getattr(_local, "opened", None)
    if opened is None:
        return cls.open_retrying(path, timeout=timeout)
    key = (cls, path)
    if key not in opened:
        opened[key] = cls.open_retrying(path, timeout=timeout)
    db = opened[key]
    assert isinstance(db, cls)
    return db


def open_count() -> int:
    """How many stores the current scope holds open (0 outside a scope)."""
    return len(getattr(_local, "opened", None) or {})
