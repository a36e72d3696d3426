"""Load a run export (:mod:`dcem.store.run_export`) back into a result store.

:func:`import_run_export` reads the export with :func:`~dcem.store.run_export.load_run_export`
(which checks every file's sha256 against the manifest) and writes all of its tables,
runs, cells, cases (with their texts), traces, outcomes, metrics, agent turns and the
compliance ablation, in one transaction: a failure leaves the store as it was.  Runs the
store already holds are skipped, so importing twice adds nothing.

What an export leaves out is filled in: the mediator-state columns of the traces
(posteriors, weights, pooled belief, agent risks, dangerous misses) are recomputed by a
replay (:mod:`dcem.store.trace_detail`); an agent turn without an error gets the
probability vector its round's trace holds for it; the case features (synthetic
sampling detail) are stored empty; the agents' notes, raw replies and cache keys stay
empty; a cell's finish time is its run's.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
from typing import Any

import duckdb
import pandas as pd

from common.db import StoreError
from common.errors import InputError
from common.fields import Instance, Seq, Text, Whole, check, fixed
from common.work import Progress
from dcem.store.database import Store
from dcem.store.run_export import TABLES, RunExport, load_run_export
from dcem.store.trace_detail import state_columns

__all__ = ["import_run_export", "stored_run_ids"]

_TRACE_KEYS = ["run_id", "case_id", "method", "round"]


def stored_run_ids(store: Store) -> set[str]:
    """Ids of every run the store holds."""
    return {str(r[0]) for r in store.con.execute("SELECT run_id FROM runs").fetchall()}


def _timestamp(value: object, field: str, run_id: str) -> _dt.datetime:
    try:
        return _dt.datetime.fromisoformat(str(value))
    except ValueError:
        raise InputError("export", f"run {run_id}: {field} {value!r} is not a date and time") from None


def _run_row(entry: object) -> dict[str, Any]:
    """One manifest run entry as a ``runs`` row; InputError when a field is missing or malformed."""
    no_id = fixed(f"a run entry of the manifest has no run id: {str(entry)[:80]}")
    check("export", entry, Instance(dict), msg=no_id, error=InputError)
    run_id = check("export", entry.get("run_id"), Text(nonempty=False, min_len=1), msg=no_id, error=InputError)
    for name, kind in (("kind", str), ("status", str), ("spec", dict), ("config", dict), ("seeds", list)):
        check("export", entry.get(name), Instance(kind), error=InputError,
              msg=fixed(f"run {run_id}: the manifest's {name!r} is missing or not a {kind.__name__}"))
    check("export", entry["seeds"], Seq(Whole()), msg=fixed(f"run {run_id}: seeds must be whole numbers"),
          error=InputError)
    created = _timestamp(entry.get("created_at"), "created_at", run_id)
    finished = entry.get("finished_at")
    return {"run_id": run_id, "kind": entry["kind"], "spec_json": json.dumps(entry["spec"], sort_keys=True),
            "config_json": json.dumps(entry["config"], sort_keys=True), "seeds": list(entry["seeds"]),
            "git_revision": entry.get("git_revision"), "created_at": created,
            "finished_at": None if finished is None else _timestamp(finished, "finished_at", run_id),
            "status": entry["status"]}


def _check_run_ids(export: RunExport, known: set[str]) -> None:
    for table in TABLES:
        frame: pd.DataFrame = getattr(export, table)
        strays = sorted(set(frame["run_id"].astype(str)) - known) if "run_id" in frame else []
        if strays:
            raise InputError("export", f"{table}.parquet holds rows of run {strays[0]!r}, "
                                       "which the manifest does not list")


def _turn_probabilities(turns: pd.DataFrame, traces: pd.DataFrame) -> list[Any]:
    """Each turn's vector from its round's trace (None for a turn with an error or no vector)."""
    if turns.empty or "probabilities" not in traces:
        return [None] * len(turns)
    vectors = {tuple(k): p for k, p in zip(traces[_TRACE_KEYS].itertuples(index=False, name=None),
                                           traces["probabilities"])}
    out: list[Any] = []
    for row in turns.itertuples(index=False):
        probs = vectors.get((row.run_id, row.case_id, row.method, row.round))
        ok = probs is not None and row.error is None and 0 <= int(row.agent) < len(probs)
        out.append([float(x) for x in probs[int(row.agent)]] if ok else None)
    return out


def _frames(export: RunExport, ids: list[str], finished: dict[str, _dt.datetime]) -> dict[str, pd.DataFrame]:
    """The rows of the runs ``ids`` for every store table, keyed by table name."""
    def rows(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[frame["run_id"].isin(ids)].reset_index(drop=True)

    cells, cases, traces, turns = rows(export.cells), rows(export.cases), rows(export.traces), rows(export.turns)
    cells["finished_at"] = [finished[r] for r in cells["run_id"]]
    texts = cases[cases["text"].notna()][["run_id", "case_id", "source_id", "text"]]
    detail = state_columns(cells, cases, traces)
    traces = traces.merge(detail, on=_TRACE_KEYS, how="left") if not detail.empty else traces
    turns["probabilities"] = _turn_probabilities(turns, traces)
    cases = cases[["run_id", "case_id", "scenario", "seed", "truth"]].assign(features=[[] for _ in range(len(cases))])
    return {"cells": cells, "cases": cases, "case_texts": texts, "traces": traces,
            "outcomes": rows(export.outcomes).drop(columns=["scenario", "seed"]),
            "metrics": rows(export.metrics), "ablation": rows(export.ablation), "agent_turns": turns}


def _insert(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame) -> None:
    if frame.empty:
        return
    con.register("_import_frame", frame)
    try:
        cols = ", ".join(frame.columns)
        con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM _import_frame")  # noqa: S608 (fixed names)
    finally:
        con.unregister("_import_frame")


def _write(store: Store, runs: list[dict[str, Any]], frames: dict[str, pd.DataFrame],
           progress: Progress | None = None) -> None:
    """Every row in one transaction; StoreError (the store unchanged) when DuckDB refuses one."""
    con = store.con
    con.execute("SET enable_progress_bar = false")  # no terminal bar while a dashboard starts
    con.execute("BEGIN TRANSACTION")
    try:
        _insert(con, "runs", pd.DataFrame(runs))
        for i, (table, frame) in enumerate(frames.items()):
            if progress is not None:
                progress(i, len(frames), f"writing {len(frame):,} rows of {table}")
            _insert(con, table, frame)
        con.execute("COMMIT")
    except duckdb.Error as exc:
        con.execute("ROLLBACK")
        raise StoreError(f"the export could not be stored, nothing was imported: {exc}") from None
    except BaseException:
        con.execute("ROLLBACK")
        raise


def import_run_export(store: Store, directory: str | os.PathLike[str], progress: Progress | None = None) -> list[str]:
    """Import the runs of the export in ``directory`` that ``store`` does not hold yet.

    Returns the ids of the runs imported (empty when the store holds them all).  Raises
    :class:`~common.errors.InputError` for a missing, modified or malformed export and
    :class:`~common.db.StoreError` when the store refuses the rows; either way nothing is
    written.  ``progress(done, total, label)`` hears of each step: each table read and
    checked, the rows shaped, each table written.
    """
    export = load_run_export(directory, progress)
    runs = [_run_row(entry) for entry in export.manifest["runs"]]
    _check_run_ids(export, {r["run_id"] for r in runs})
    present = stored_run_ids(store)
    new = [r for r in runs if r["run_id"] not in present]
    if not new:
        return []
    ids = [r["run_id"] for r in new]
    if progress is not None:
        progress(0, 1, f"shaping the rows of {len(ids)} run(s) for the store")
    frames = _frames(export, ids, {r["run_id"]: r["finished_at"] or r["created_at"] for r in new})
    _write(store, new, frames, progress)
    return ids
