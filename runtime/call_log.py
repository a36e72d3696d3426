"""Every model call logged in DuckDB, and answered from that log when it is repeated.

One append-only table, ``llm_calls`` (migration ``runtime/001_llm_calls``), holds one
row per call that reached a model: run, case, agent, round, purpose, backend, model and
its sha256, the full message stack, the options, the raw reply, the parsed reply, the
probabilities, token counts, duration, error and time.

The cache key is the sha256 of everything that determines the reply (backend name,
model sha256, how the caller asks, generation options including temperature and seed,
purpose, the full message stack).  A repeated call with the same key is answered from
the newest error-free row: no model call, no new row.  So re-running a finished
experiment makes zero model calls and an interrupted one resumes where it stopped.

A Ray worker answers from rows shipped to it and returns the rows it adds
(:mod:`runtime.call_shipping`); :meth:`CallLog.lookup_rows`, :meth:`CallLog.rows`,
:meth:`CallLog.call_ids` and :meth:`CallLog.add_rows` are the reads and the append it uses.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import uuid
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pandas as pd

from common.db import Database
from common.migrations import migrate
from common.transactions import run_in_transaction
from runtime.messages import Message
from runtime.migrations import MIGRATIONS, PACKAGE

__all__ = ["CallContext", "CallRecord", "CachedCall", "CallLog", "cache_key"]

_COLUMNS = ("call_id", "cache_key", "run_id", "case_id", "agent", "round", "purpose", "backend", "model",
            "model_sha256", "messages_json", "options_json", "raw_reply", "parsed_json", "probabilities",
            "prompt_tokens", "completion_tokens", "duration_s", "error", "created_at")
_ALL = ", ".join(_COLUMNS)
# What a shipped lookup reads: the message stack and options stay in the driver's store.
_LOOKUP = _ALL.replace("messages_json, options_json", "'[]' AS messages_json, '{}' AS options_json")


@dataclass(frozen=True)
class CallContext:
    """Where a call belongs: shown in the log, not part of the cache key."""

    run_id: str | None = None
    case_id: str | None = None
    agent: int | None = None
    round: int | None = None


@dataclass(frozen=True)
class CallRecord:
    """One finished model call, as the log stores it."""

    key: str
    purpose: str
    backend: str
    model: str
    model_sha256: str
    messages: Sequence[Message]
    options: Mapping[str, Any]
    raw: str | None
    parsed: Mapping[str, Any]
    probabilities: Sequence[float]
    prompt_tokens: int | None
    completion_tokens: int | None
    duration_s: float | None
    error: str | None


@dataclass(frozen=True)
class CachedCall:
    """A logged reply that answers a repeated call."""

    raw: str | None
    parsed: dict[str, Any]
    probabilities: list[float]
    prompt_tokens: int
    completion_tokens: int
    duration_s: float


def cache_key(fields: Mapping[str, Any], messages: Sequence[Message]) -> str:
    """sha256 of ``fields`` (backend, model sha256, mode, options, purpose ...) and the messages."""
    blob = json.dumps({**fields, "messages": [m.to_dict() for m in messages]}, sort_keys=True,
                      ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


# A logged vector answers from the cache only if it is empty (a generation call) or
# finite with positive total mass; anything else is a poisoned row (a bad reply that was
# logged as good by an older version) and is skipped, and clear_invalid() marks it.
_USABLE = ("(coalesce(len(probabilities), 0) = 0 OR (isfinite(list_sum(probabilities)) "
           "AND list_sum(probabilities) > 0 AND list_min(probabilities) >= 0))")


class CallLog:
    """The ``llm_calls`` table of a project database (created on first use)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        if not db.read_only:
            migrate(db.con, PACKAGE, MIGRATIONS)

    def lookup(self, key: str) -> CachedCall | None:
        """The newest error-free reply logged under ``key``, if any."""
        row = self.db.con.cursor().execute(
            "SELECT raw_reply, parsed_json, probabilities, prompt_tokens, completion_tokens, duration_s "
            f"FROM llm_calls WHERE cache_key = ? AND error IS NULL AND {_USABLE} ORDER BY created_at DESC LIMIT 1",
            [key]).fetchone()
        if row is None:
            return None
        raw, parsed, probs, p_tok, c_tok, dur = row
        return CachedCall(raw, json.loads(parsed), list(probs or []), p_tok or 0, c_tok or 0, dur or 0.0)

    def record(self, call: CallRecord, context: CallContext = CallContext()) -> None:
        """Append one call (its own transaction)."""
        row = [uuid.uuid4().hex, call.key, context.run_id, context.case_id, context.agent, context.round,
               call.purpose, call.backend, call.model, call.model_sha256,
               json.dumps([m.to_dict() for m in call.messages], ensure_ascii=False),
               json.dumps(dict(call.options), sort_keys=True), call.raw, json.dumps(dict(call.parsed)),
               [float(p) for p in call.probabilities], call.prompt_tokens, call.completion_tokens,
               call.duration_s, call.error, _dt.datetime.now()]
        sql = (f"INSERT INTO llm_calls ({', '.join(_COLUMNS)}) "  # noqa: S608 (fixed column names)
               f"VALUES ({', '.join('?' * len(_COLUMNS))})")
        run_in_transaction(self.db, lambda cur: cur.execute(sql, row))

    def invalid_count(self) -> int:
        """Error-free rows whose probability vector is unusable (see :data:`_USABLE`)."""
        row = self.db.con.cursor().execute(
            f"SELECT count(*) FROM llm_calls WHERE error IS NULL AND NOT {_USABLE}").fetchone()  # noqa: S608
        return int(row[0]) if row else 0

    def clear_invalid(self) -> int:
        """Mark every error-free row with an unusable probability vector as failed, so it
        never answers from the cache again (the row stays, with the reason); returns how many."""
        n = self.invalid_count()
        if n:
            run_in_transaction(self.db, lambda cur: cur.execute(
                "UPDATE llm_calls SET error = 'cleared: the logged probability vector is not finite or has no "
                f"positive mass' WHERE error IS NULL AND NOT {_USABLE}"))  # noqa: S608
        return n

    def count(self, run_id: str | None = None) -> int:
        """Rows in the log (of one run when given)."""
        row = self.db.con.cursor().execute(
            "SELECT count(*) FROM llm_calls WHERE ? IS NULL OR run_id = ?", [run_id, run_id]).fetchone()
        return int(row[0]) if row else 0

    # ------------------------------------------------- rows shipped to and from workers
    def lookup_rows(self, run_ids: Sequence[str] = (), case_ids: Sequence[str] = ()) -> pd.DataFrame:
        """Error-free rows of the given runs or cases, as a lookup needs them (the message
        stack and options left empty: ``'[]'`` and ``'{}'``)."""
        return self.db.con.cursor().execute(
            f"SELECT {_LOOKUP} FROM llm_calls WHERE error IS NULL AND "  # noqa: S608 (fixed columns)
            "(list_contains(?, run_id) OR list_contains(?, case_id))", [list(run_ids), list(case_ids)]).df()

    def call_ids(self) -> set[str]:
        """The id of every logged row."""
        return {r[0] for r in self.db.con.cursor().execute("SELECT call_id FROM llm_calls").fetchall()}

    def rows(self) -> pd.DataFrame:
        """Every logged row, every column, oldest first."""
        return self.db.con.cursor().execute(f"SELECT {_ALL} FROM llm_calls ORDER BY created_at").df()  # noqa: S608

    def add_rows(self, frame: pd.DataFrame, *, transaction: bool = True) -> None:
        """Append the rows of ``frame`` (every column) whose call id the log lacks, in one
        transaction (``transaction=False``: one statement on a cursor of its own)."""
        if frame.empty:
            return
        if transaction:
            run_in_transaction(self.db, lambda cur: _insert_rows(cur, frame))
        else:
            _insert_rows(self.db.con.cursor(), frame)


def _insert_rows(cur: Any, frame: pd.DataFrame) -> None:
    cur.register("_calls", frame)
    try:
        cur.execute(f"INSERT INTO llm_calls ({_ALL}) SELECT {_ALL} FROM _calls "  # noqa: S608 (fixed columns)
                    "WHERE call_id NOT IN (SELECT call_id FROM llm_calls)")
    finally:
        cur.unregister("_calls")
