"""Model calls of units computed away from the store (a Ray worker): shipped both ways.

The driver alone writes the store, so a worker computes against an in-memory store of its
own.  Before the run the driver reads the logged calls the run can be answered from
(:func:`logged_calls`: error-free rows of the run's ids or of its cases) and ships them;
the worker loads them into its store (:func:`preload`), so a repeated call is answered
from the log there exactly as it is in process; after each unit the worker takes the rows
the unit added (:class:`NewCalls`) and returns them with the result; the driver appends
them (:func:`append_calls`) before it writes the unit.  A worker that dies takes its
unit's calls with it: the unit is computed again.
"""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from common.db import Database
from runtime.call_log import CallLog

__all__ = ["logged_calls", "preload", "NewCalls", "append_calls", "memory_log"]


def logged_calls(db: Database, *, run_ids: Sequence[str] = (), case_ids: Sequence[str] = ()) -> pd.DataFrame:
    """Error-free logged calls of the given runs or cases, as a lookup needs them (the
    message stack and options stay in the driver's store: the worker's copy only answers
    repeated calls, and the rows it returns are its own, whole)."""
    return CallLog(db).lookup_rows(run_ids, case_ids)


def preload(db: Database, frame: pd.DataFrame) -> None:
    """Load shipped rows into a worker's store (rows it has already are kept once)."""
    CallLog(db).add_rows(frame, transaction=False)


def memory_log(frame: pd.DataFrame | None, make: Any = Database) -> Any:
    """A worker's in-memory store (``make(":memory:")``) with the shipped calls loaded."""
    db = make(":memory:")
    preload(db, frame if frame is not None else pd.DataFrame())
    return db


class NewCalls:
    """The rows a worker's store gained since the last :meth:`take` (or since it was made)."""

    def __init__(self, db: Database) -> None:
        self.log = CallLog(db)
        self.db = db
        self.seen = self.log.call_ids()

    def take(self) -> pd.DataFrame:
        frame = self.log.rows()
        new = frame[~frame["call_id"].isin(self.seen)].reset_index(drop=True)
        self.seen.update(new["call_id"])
        return new


def append_calls(db: Database, frame: pd.DataFrame | None) -> int:
    """Append a worker's rows to the driver's log in one transaction; returns how many."""
    if frame is None or frame.empty:
        return 0
    CallLog(db).add_rows(frame)
    return len(frame)
