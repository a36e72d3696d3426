"""The runs each kind kept in its own tables before the ledger, copied into it.

A store written before :mod:`common.ledger` (or by code that still writes only its kind's
tables) opens with every run listed: each writable open copies, in one transaction, what
the ledger lacks of

* D-CEM ``runs`` (kind as stored: ``synthetic``, ``clinical``; spec ``{"spec", "config",
  "seeds"}``, what :meth:`dcem.store.database.Store.ensure_run` compares), their ``cells``
  (done, key ``<scenario>/seed <seed>`` as :func:`dcem.store.grid.cell_key` gives it) and
  ``cell_failures`` (the latest message of a cell not stored);
* SAG ``sag_runs`` (kind ``sag``; spec ``{"benchmark", "items", "config", "seed"}``, the
  :meth:`sag.runs.run.SagRunSpec.to_dict` of the run), their answered items (``sag_outcomes``,
  key the item id) and ``sag_failures`` (the reason);
* training ``train_runs`` (kind ``training``; spec ``{"kind", "method", "base_model",
  "settings", "data_hash"}``, what :meth:`training.store.TrainingStore.check_start`
  compares), their optimiser steps (``train_steps``, key ``step <n>``).

Only what is missing is added (a run the ledger has keeps its row, except its status and
finish time, which follow its kind's table until the ledger holds it finished; a unit stored
since it failed becomes done; a newer failure replaces an older one), so a second open adds
nothing.
A table that does not exist (a store of one kind only, or an older schema) is skipped.
"""
from __future__ import annotations

import json
from typing import Any, Callable

import duckdb

__all__ = ["adopt_old_runs", "OLD_RUN_TABLES"]

OLD_RUN_TABLES = ("runs", "sag_runs", "train_runs")

_INSERT_RUN = ("INSERT INTO ledger_runs (run_id, kind, spec_json, status, created_at, finished_at, revision) "
               "VALUES (?, ?, ?, ?, ?, ?, ?)")
# a run the ledger has takes the status its kind's table gives it now (a run resumed, finished or
# failed since the last open), unless the ledger holds it finished: finished stays finished
_SYNC_STATUS = ("UPDATE ledger_runs SET status = ?, finished_at = ? WHERE run_id = ? AND status <> 'finished' "
                "AND (status <> ? OR finished_at IS DISTINCT FROM ?)")
_UPSERT = ("INSERT INTO ledger_units (run_id, unit_key, state, message, updated_at) {select} "
           "ON CONFLICT (run_id, unit_key) DO UPDATE SET state = excluded.state, message = excluded.message, "
           "updated_at = excluded.updated_at WHERE ledger_units.state = 'failed' AND "
           "(excluded.state = 'done' OR ledger_units.updated_at < excluded.updated_at)")
# (tables that must exist, the SELECT of (run_id, unit_key, state, message, updated_at) rows)
_UNITS = (
    (("runs", "cells"), "SELECT run_id, scenario || '/seed ' || seed, 'done', NULL, finished_at FROM cells "
              "WHERE run_id IN (SELECT run_id FROM runs)"),
    (("runs", "cells", "cell_failures"), "SELECT f.run_id, f.scenario || '/seed ' || f.seed, 'failed', arg_max(f.message, f.failed_at), "
                      "max(f.failed_at) FROM cell_failures f WHERE f.run_id IN (SELECT run_id FROM runs) AND NOT "
                      "EXISTS (SELECT 1 FROM cells c WHERE c.run_id = f.run_id AND c.scenario = f.scenario AND "
                      "c.seed = f.seed) GROUP BY f.run_id, f.scenario, f.seed"),
    (("sag_runs", "sag_outcomes"), "SELECT run_id, item_id, 'done', NULL, created_at FROM sag_outcomes "
                     "WHERE run_id IN (SELECT run_id FROM sag_runs)"),
    (("sag_runs", "sag_outcomes", "sag_failures"), "SELECT f.run_id, f.item_id, 'failed', f.reason, f.failed_at FROM sag_failures f "
                     "WHERE f.run_id IN (SELECT run_id FROM sag_runs) AND NOT EXISTS (SELECT 1 FROM sag_outcomes o "
                     "WHERE o.run_id = f.run_id AND o.item_id = f.item_id)"),
    (("train_runs", "train_steps"), "SELECT s.run_id, 'step ' || s.step, 'done', NULL, coalesce(r.finished_at, r.created_at) "
                    "FROM train_steps s JOIN train_runs r USING (run_id)"),
)


def _revision(value: Any) -> str | None:
    return None if value in (None, "", "unknown") else str(value)


def _dcem(row: tuple[Any, ...]) -> tuple[Any, ...]:
    run_id, kind, spec, config, seeds, revision, created, finished, status = row
    blob = {"spec": json.loads(spec), "config": json.loads(config), "seeds": [int(s) for s in seeds]}
    return run_id, kind, json.dumps(blob, sort_keys=True), status, created, finished, _revision(revision)


def _sag(row: tuple[Any, ...]) -> tuple[Any, ...]:
    run_id, benchmark, items, config, seed, revision, created, finished, status = row
    blob = {"benchmark": benchmark, "items": list(items), "config": json.loads(config), "seed": int(seed)}
    return run_id, "sag", json.dumps(blob, sort_keys=True), status, created, finished, _revision(revision)


def _training(row: tuple[Any, ...]) -> tuple[Any, ...]:
    run_id, kind, method, base_model, settings, data_hash, created, finished, status = row
    blob = {"kind": kind, "method": method, "base_model": base_model, "settings": json.loads(settings),
            "data_hash": data_hash}
    return run_id, "training", json.dumps(blob, sort_keys=True), status, created, finished, None


_RUNS: tuple[tuple[str, str, Callable[[tuple[Any, ...]], tuple[Any, ...]]], ...] = (
    ("runs", "SELECT run_id, kind, spec_json, config_json, seeds, git_revision, created_at, finished_at, status "
             "FROM runs", _dcem),
    ("sag_runs", "SELECT run_id, benchmark, item_ids, config_json, seed, git_revision, created_at, finished_at, "
                 "status FROM sag_runs", _sag),
    ("train_runs", "SELECT run_id, kind, method, base_model, settings_json, data_hash, created_at, finished_at, "
                   "status FROM train_runs", _training),
)


def _tables(cur: duckdb.DuckDBPyConnection) -> set[str]:
    return {str(t) for (t,) in cur.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()}


def adopt_old_runs(cur: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Copy into the ledger what it lacks of the old run tables (see the module docstring),
    on ``cur`` (inside the caller's transaction); returns rows added or changed per source
    table (only the tables that exist)."""
    present, changed = _tables(cur), {}
    for table, select, to_row in _RUNS:
        if table in present:
            known = {str(r) for (r,) in cur.execute("SELECT run_id FROM ledger_runs").fetchall()}
            rows = [to_row(r) for r in cur.execute(select).fetchall()]
            new = [r for r in rows if r[0] not in known]
            if new:
                cur.executemany(_INSERT_RUN, new)
            synced = 0
            for run_id, _kind, _spec, status, _created, finished, _rev in (r for r in rows if r[0] in known):
                synced += _count(cur.execute(_SYNC_STATUS, [status, finished, run_id, status, finished]).fetchone())
            changed[table] = len(new) + synced
    for tables, select in _UNITS:
        if present.issuperset(tables):
            changed[tables[-1]] = _count(cur.execute(_UPSERT.format(select=select)).fetchone())
    return changed


def _count(row: tuple[Any, ...] | None) -> int:
    return int(row[0]) if row else 0

