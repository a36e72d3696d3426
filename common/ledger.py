"""One ledger of runs for every kind of run: what ran, with which spec, and which units are stored.

Two tables in the store's file (package ``ledger`` of :mod:`common.migrations`):

* ``ledger_runs``: one row per run: ``run_id`` (the hash of its spec), ``kind``
  (``synthetic``, ``clinical``, ``sag``, ``training``, ...), ``spec_json`` (the spec as
  sorted JSON), ``status`` (``running``, ``finished``, ``failed``; ``stopped`` for a
  training run stopped on purpose), ``created_at``, ``finished_at``, ``revision`` (the
  code's git commit when known, else NULL);
* ``ledger_units``: one row per unit of a run, its latest state: ``done`` (stored) or
  ``failed`` (with its ``message``), and when (``updated_at``).  A done unit stays done.

:meth:`Ledger.start` refuses a stored run given another kind or spec before anything is
written (:func:`common.resume.check_resume`, naming the first field that differs);
:meth:`Ledger.unit_done` writes a unit's row on the kind's own transaction (cursor), so a
unit's results and its ledger row commit together (:meth:`Ledger.save_unit` runs both).
A kind that keeps a status column in its own runs table (``runs``, ``sag_runs``) hands the
ledger a ``mirror``: :meth:`Ledger.finish` and :meth:`Ledger.mark_failed` call it on the
same transaction, so the kind's table never says otherwise than the ledger.
Opening a store writable also copies into the ledger the runs of the tables each kind kept
before (:mod:`common.ledger_adopt`). All SQL uses ``?`` parameters.
"""
from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import duckdb
import pandas as pd

from common.db import Database, StoreError, git_revision
from common.ledger_adopt import adopt_old_runs
from common.merge_checks import RowCheck, belongs, json_text, one_of, same_in_both
from common.migrations import Migration, migrate
from common.resume import check_resume
from common.transactions import cursor, run_in_transaction

__all__ = ["Ledger", "LedgerRun", "StatusMirror", "table_mirror", "PACKAGE", "MIGRATIONS", "RUN_STATUSES", "UNIT_STATES",
           "ledger_checks"]

PACKAGE = "ledger"
RUN_STATUSES = ("running", "finished", "failed", "stopped")
UNIT_STATES = ("done", "failed")
_RESUME_HINT = ("repeat the command that started it to resume it, or run these settings under another run id "
                "or in another store")

_M001 = [
    """CREATE TABLE ledger_runs (
        run_id VARCHAR PRIMARY KEY,
        kind VARCHAR NOT NULL,
        spec_json VARCHAR NOT NULL,
        status VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        finished_at TIMESTAMP,
        revision VARCHAR
    )""",
    """CREATE TABLE ledger_units (
        run_id VARCHAR NOT NULL,
        unit_key VARCHAR NOT NULL,
        state VARCHAR NOT NULL,
        message VARCHAR,
        updated_at TIMESTAMP NOT NULL,
        PRIMARY KEY (run_id, unit_key)
    )""",
]
MIGRATIONS: list[Migration] = [("001_ledger_runs_units", _M001)]

StatusMirror = Callable[[duckdb.DuckDBPyConnection, str, str, "_dt.datetime | None"], None]
"""``mirror(cur, run_id, status, finished_at)``: a kind's own runs table told, on the ledger's
transaction, that a run finished (``finished_at`` set) or failed (``finished_at`` None)."""



def table_mirror(table: str) -> StatusMirror:
    """The mirror of a kind whose runs table ``table`` keeps ``status`` and ``finished_at``
    columns by ``run_id``: both set as the ledger holds them."""
    sql = f"UPDATE {table} SET status = ?, finished_at = ? WHERE run_id = ?"  # noqa: S608 (a kind's own table name)

    def mirror(cur: duckdb.DuckDBPyConnection, run_id: str, status: str, finished: "_dt.datetime | None") -> None:
        cur.execute(sql, [status, finished, run_id])
    return mirror


_RUN_COLUMNS = ["run_id", "kind", "status", "created_at", "finished_at", "revision", "spec_json", "done", "failed"]
_UNIT_COLUMNS = ["unit_key", "state", "message", "updated_at"]
_COUNTS = ("(SELECT count(*) FROM ledger_units u WHERE u.run_id = r.run_id AND u.state = 'done') AS done, "
           "(SELECT count(*) FROM ledger_units u WHERE u.run_id = r.run_id AND u.state = 'failed') AS failed")


@dataclass(frozen=True)
class LedgerRun:
    """One run as the ledger holds it, with its units' counts."""

    run_id: str
    kind: str
    spec: dict[str, Any]
    status: str
    created_at: _dt.datetime
    finished_at: _dt.datetime | None
    revision: str | None
    done: int
    failed: int


def _now() -> _dt.datetime:
    return _dt.datetime.now()


def _json_value(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=lambda v: json.dumps(v, sort_keys=True, default=_json_value))
    raise TypeError(f"a run's spec holds a {type(value).__name__} ({value!r}), which JSON cannot keep; "
                    "give its to_dict() plain values")


def _spec_json(spec: Mapping[str, Any]) -> str:
    """The spec as sorted JSON (tuples become lists, sets sorted lists)."""
    if not isinstance(spec, Mapping):
        raise TypeError(f"a run's spec is a mapping (its to_dict()), got {type(spec).__name__}")
    return json.dumps(dict(spec), sort_keys=True, default=_json_value)


def ledger_checks() -> tuple[RowCheck, ...]:
    """The rules a ledger row keeps when another store or an export is merged in
    (:mod:`common.merge_checks`): a run has an id, a kind's name, a JSON spec and a known
    status, a finish time when finished, and means the same in both files; a unit belongs
    to a run and is done or failed (with its message)."""
    return (
        RowCheck("ledger_runs", "run_id", "r.run_id = ''", "must not be empty"),
        RowCheck("ledger_runs", "kind", "NOT regexp_full_match(r.kind, '[a-z][a-z0-9-]*')",
                 "must be a kind's name (lower-case letters, digits and '-')"),
        json_text("ledger_runs", "spec_json"),
        one_of("ledger_runs", "status", RUN_STATUSES),
        RowCheck("ledger_runs", "finished_at", "r.status = 'finished' AND r.finished_at IS NULL",
                 "must be set when the run is finished"),
        *same_in_both("ledger_runs", "kind", "spec_json"),
        RowCheck("ledger_units", "unit_key", "r.unit_key = ''", "must not be empty"),
        one_of("ledger_units", "state", UNIT_STATES),
        RowCheck("ledger_units", "message", "r.state = 'failed' AND r.message IS NULL", "must say why the unit failed"),
        belongs("ledger_units", "ledger_runs", ("run_id",),
                "must belong to a run of the ledger (in the target or among the merged rows)"),
    )


class Ledger:
    """The ledger tables of ``store`` (any :class:`common.db.Database`); a writable store
    gets them (and the old runs copied in) when the ledger is made."""

    def __init__(self, store: Database, *, revision: Callable[[], str] = git_revision,
                 mirror: StatusMirror | None = None) -> None:
        self.store, self._revision, self._mirror = store, revision, mirror
        if not store.read_only:
            migrate(store.con, PACKAGE, MIGRATIONS)
            run_in_transaction(store, adopt_old_runs)

    # ------------------------------------------------------------------ writes
    def start(self, run_id: str, kind: str, spec: Mapping[str, Any]) -> bool:
        """Record run ``run_id`` of ``kind`` with ``spec``; True when it was stored already (a
        resume: its status goes back to running unless finished).  A stored run of another
        kind or spec is refused (:class:`common.resume.ResumeRefused`), nothing written."""
        if not run_id or not isinstance(run_id, str):
            raise ValueError(f"a run id is a non-empty string, got {run_id!r}")
        if not kind or not isinstance(kind, str):
            raise ValueError(f"a run kind is a non-empty string, got {kind!r}")
        given = json.loads(_spec_json(spec))

        def work(cur: duckdb.DuckDBPyConnection) -> bool:
            row = cur.execute("SELECT kind, spec_json FROM ledger_runs WHERE run_id = ?", [run_id]).fetchone()
            if row is None:
                revision = self._revision()
                cur.execute("INSERT INTO ledger_runs (run_id, kind, spec_json, status, created_at, finished_at, "
                            "revision) VALUES (?, ?, ?, 'running', ?, NULL, ?)",
                            [run_id, kind, _spec_json(spec), _now(), None if revision == "unknown" else revision])
                return False
            check_resume(f"run {run_id}", {"kind": row[0]}, {"kind": kind}, hint=_RESUME_HINT)
            check_resume(f"run {run_id}", json.loads(row[1]), given, hint=_RESUME_HINT)
            cur.execute("UPDATE ledger_runs SET status = 'running', finished_at = NULL WHERE run_id = ? "
                        "AND status <> 'finished'", [run_id])
            return True
        return run_in_transaction(self.store, work)

    @staticmethod
    def unit_done(cur: duckdb.DuckDBPyConnection, run_id: str, key: str) -> None:
        """Mark unit ``key`` of ``run_id`` done, on ``cur``: call it inside the transaction
        that writes the unit's own rows, so both commit or neither does."""
        cur.execute("INSERT INTO ledger_units (run_id, unit_key, state, message, updated_at) "
                    "VALUES (?, ?, 'done', NULL, ?) ON CONFLICT (run_id, unit_key) DO UPDATE SET "
                    "state = 'done', message = NULL, updated_at = excluded.updated_at", [run_id, key, _now()])

    def save_unit(self, run_id: str, key: str, write: Callable[[duckdb.DuckDBPyConnection], None]) -> None:
        """``write(cur)`` (the kind's rows of the unit) and the unit's done row, in one transaction."""
        def work(cur: duckdb.DuckDBPyConnection) -> None:
            write(cur)
            self.unit_done(cur, run_id, key)
        run_in_transaction(self.store, work)

    def unit_failed(self, run_id: str, key: str, message: str) -> None:
        """Record that unit ``key`` failed with ``message`` (its latest failure); a done unit stays done."""
        def work(cur: duckdb.DuckDBPyConnection) -> None:
            cur.execute("INSERT INTO ledger_units (run_id, unit_key, state, message, updated_at) "
                        "VALUES (?, ?, 'failed', ?, ?) ON CONFLICT (run_id, unit_key) DO UPDATE SET "
                        "message = excluded.message, updated_at = excluded.updated_at "
                        "WHERE ledger_units.state = 'failed'", [run_id, key, str(message), _now()])
        run_in_transaction(self.store, work)

    def finish(self, run_id: str) -> None:
        """Every unit is stored: the run is finished (a finished run keeps when it first finished)."""
        self._set_status("UPDATE ledger_runs SET status = 'finished', finished_at = ? WHERE run_id = ? "
                         "AND status <> 'finished'", [_now(), run_id], run_id)

    def mark_failed(self, run_id: str) -> None:
        """The run ended with failed units: not finished; the same command retries them."""
        self._set_status("UPDATE ledger_runs SET status = 'failed', finished_at = NULL WHERE run_id = ? "
                         "AND status <> 'finished'", [run_id], run_id)

    def stop(self, run_id: str) -> None:
        """The run was stopped on purpose (a step budget spent, Ctrl-C): not finished; the same
        command resumes it."""
        self._set_status("UPDATE ledger_runs SET status = 'stopped', finished_at = NULL WHERE run_id = ? "
                         "AND status <> 'finished'", [run_id], run_id)

    @staticmethod
    def forget(cur: duckdb.DuckDBPyConnection, run_id: str, keys: list[str]) -> None:
        """Drop units ``keys`` of ``run_id`` from the ledger, on ``cur`` (inside the kind's
        transaction that drops their rows): work a resume does again (a training run's steps
        after its last checkpoint)."""
        if keys:
            cur.execute("DELETE FROM ledger_units WHERE run_id = ? AND list_contains(?, unit_key)", [run_id, keys])

    def _set_status(self, sql: str, params: list[Any], run_id: str) -> None:
        def work(cur: duckdb.DuckDBPyConnection) -> None:
            self._check_run(cur, run_id)
            cur.execute(sql, params)
            if self._mirror is not None:
                status, finished = cur.execute("SELECT status, finished_at FROM ledger_runs WHERE run_id = ?",
                                               [run_id]).fetchone()
                self._mirror(cur, run_id, str(status), finished)
        run_in_transaction(self.store, work)

    def _check_run(self, cur: duckdb.DuckDBPyConnection, run_id: str) -> None:
        if cur.execute("SELECT 1 FROM ledger_runs WHERE run_id = ?", [run_id]).fetchone() is None:
            raise StoreError(f"no run {run_id!r} in the ledger of {self.store.path}")

    # ------------------------------------------------------------------- reads
    def _has_tables(self, cur: duckdb.DuckDBPyConnection) -> bool:
        return cur.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'main' "
                           "AND table_name IN ('ledger_runs', 'ledger_units')").fetchone()[0] == 2

    def done_keys(self, run_id: str) -> set[str]:
        """The keys of the run's stored units."""
        with cursor(self.store) as cur:
            if not self._has_tables(cur):
                return set()
            rows = cur.execute("SELECT unit_key FROM ledger_units WHERE run_id = ? AND state = 'done'",
                               [run_id]).fetchall()
        return {str(k) for (k,) in rows}

    def runs(self, kind: str | None = None) -> pd.DataFrame:
        """Every run (of ``kind`` when given), newest first, with its done and failed units."""
        with cursor(self.store) as cur:
            if not self._has_tables(cur):
                return pd.DataFrame(columns=_RUN_COLUMNS)
            return cur.execute(f"SELECT {', '.join(_RUN_COLUMNS[:-2])}, {_COUNTS} FROM ledger_runs r "  # noqa: S608
                               "WHERE ? IS NULL OR kind = ? ORDER BY created_at DESC, run_id", [kind, kind]).df()

    def run(self, run_id: str) -> LedgerRun:
        """Run ``run_id``; :class:`common.db.StoreError` when the ledger has no such run."""
        with cursor(self.store) as cur:
            if not self._has_tables(cur):
                raise StoreError(f"no run {run_id!r} in the ledger of {self.store.path}")
            row = cur.execute(f"SELECT {', '.join(_RUN_COLUMNS[:-2])}, {_COUNTS} FROM ledger_runs r "  # noqa: S608
                              "WHERE run_id = ?", [run_id]).fetchone()
        if row is None:
            raise StoreError(f"no run {run_id!r} in the ledger of {self.store.path}")
        rid, kind, status, created, finished, revision, spec, done, failed = row
        return LedgerRun(str(rid), str(kind), json.loads(spec), str(status), created, finished,
                         None if revision is None else str(revision), int(done), int(failed))

    def units(self, run_id: str) -> pd.DataFrame:
        """The run's units (key, state, message, updated_at), done first, then by key."""
        with cursor(self.store) as cur:
            if not self._has_tables(cur):
                return pd.DataFrame(columns=_UNIT_COLUMNS)
            return cur.execute(f"SELECT {', '.join(_UNIT_COLUMNS)} FROM ledger_units "  # noqa: S608
                               "WHERE run_id = ? ORDER BY state, unit_key", [run_id]).df()
