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
from common.transactions import run_in_transaction
from runtime.call_log import CallLog

__all__ = ["logged_calls", "preload", "NewCalls", "append_calls", "memory_log"]

# What a lookup reads; the message stack and options stay in the driver's store (the
# worker's copy only answers repeated calls, and the rows it returns are its own, whole).
_LOOKUP = ("call_id, cache_key, run_id, case_id, agent, round, purpose, backend, model, model_sha256, "
           "'[]' AS messages_json, '{}' AS options_json, raw_reply, parsed_json, probabilities, prompt_tokens, "
           "completion_tokens, duration_s, error, created_at")
_ALL = ("call_id, cache_key, run_id, case_id, agent, round, purpose, backend, model, model_sha256, messages_json, "
        "options_json, raw_reply, parsed_json, probabilities, prompt_tokens, completion_tokens, duration_s, error, "
        "created_at")


def logged_calls(db: Database, *, run_ids: Sequence[str] = (), case_ids: Sequence[str] = ()) -> pd.DataFrame:
    """Error-free logged calls of the given runs or cases, as a lookup needs them."""
    CallLog(db)  # the table exists
    return db.con.cursor().execute(
        f"SELECT {_LOOKUP} FROM llm_calls WHERE error IS NULL AND "  # noqa: S608 (fixed columns)
        "(list_contains(?, run_id) OR list_contains(?, case_id))", [list(run_ids), list(case_ids)]).df()


def _insert(cur: Any, frame: pd.DataFrame) -> None:
    if frame.empty:
        return
    cur.register("_calls", frame)
    try:
        cur.execute(f"INSERT INTO llm_calls ({_ALL}) SELECT {_ALL} FROM _calls "  # noqa: S608
                    "WHERE call_id NOT IN (SELECT call_id FROM llm_calls)")
    finally:
        cur.unregister("_calls")


def preload(db: Database, frame: pd.DataFrame) -> None:
    """Load shipped rows into a worker's store (rows it has already are kept once)."""
    CallLog(db)
    _insert(db.con.cursor(), frame)


def memory_log(frame: pd.DataFrame | None, make: Any = Database) -> Any:
    """A worker's in-memory store (``make(":memory:")``) with the shipped calls loaded."""
    db = make(":memory:")
    preload(db, frame if frame is not None else pd.DataFrame())
    return db


class NewCalls:
    """The rows a worker's store gained since the last :meth:`take` (or since it was made)."""

    def __init__(self, db: Database) -> None:
        CallLog(db)
        self.db = db
        self.seen = {r[0] for r in db.con.cursor().execute("SELECT call_id FROM llm_calls").fetchall()}

    def take(self) -> pd.DataFrame:
        frame = self.db.con.cursor().execute(f"SELECT {_ALL} FROM llm_calls ORDER BY created_at").df()  # noqa: S608
        new = frame[~frame["call_id"].isin(self.seen)].reset_index(drop=True)
        self.seen.update(new["call_id"])
        return new


def append_calls(db: Database, frame: pd.DataFrame | None) -> int:
    """Append a worker's rows to the driver's log in one transaction; returns how many."""
    if frame is None or frame.empty:
        return 0
    CallLog(db)
    run_in_transaction(db, lambda cur: _insert(cur, frame))
    return len(frame)
