"""Ctrl-C around DuckDB: seen as the interrupt it is, and kept out of a commit.

Ctrl-C while DuckDB runs a statement does not always arrive as ``KeyboardInterrupt``:
DuckDB stops the statement and raises ``RuntimeError("Query interrupted")`` (or its
``InterruptException``).  :func:`is_interrupt` recognises all three, so a caller can
re-raise them as ``KeyboardInterrupt`` and the command line ends with its one-line
message.  A Ctrl-C during ``COMMIT`` could stop the Python side after DuckDB has already
committed, and a rollback would then fail and a message say "nothing was changed" when
everything was: :func:`deferred_interrupt` holds Ctrl-C back for the length of a short
block (the commit), after which the work is done and is reported as done.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Iterator

import duckdb

__all__ = ["is_interrupt", "deferred_interrupt"]


def is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is a Ctrl-C: Python's own, or DuckDB's report of a stopped statement."""
    if isinstance(exc, (KeyboardInterrupt, duckdb.InterruptException)):
        return True
    return isinstance(exc, RuntimeError) and str(exc).startswith("Query interrupted")


@contextlib.contextmanager
def deferred_interrupt() -> Iterator[list[Any]]:
    """Hold Ctrl-C back during the block (main thread only; elsewhere a no-op); yields the
    list of signals that arrived meanwhile, which are not raised afterwards."""
    caught: list[Any] = []
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield caught
    finally:
        signal.signal(signal.SIGINT, previous)
