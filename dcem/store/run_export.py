"""Stored runs as a small, checkable directory: ``manifest.json`` plus Parquet tables.

:func:`write_run_export` copies the rows of the given runs that the reports read (cells,
cases with their text, per-round traces, outcomes, metrics, each agent turn's note,
reply, parse error and few-shot examples, and the synthetic compliance ablation) with
DuckDB's own Parquet writer (ZSTD), and writes a manifest with the format tag
:data:`FORMAT`, every run's kind, spec and config, the exact command that made the runs,
the model files (name, size, sha256) and the row count, size and sha256 of every file
written.  :func:`load_run_export` reads it back with DuckDB's ``read_parquet`` (no
pyarrow), refusing a directory that is missing, a manifest with any field out of place
(:mod:`dcem.store.export_manifest`: file names are the plain ``<table>.parquet`` of the
folder itself) and files that differ from the manifest or from the tables' schemas, keys
and relations (:mod:`dcem.store.export_tables`).  The clinical tables (Appendix H,
Tables 6, 7 and 1) can then be printed and re-derived from the outcomes without the
store (:mod:`dcem.analysis.export_metrics`).

Traces keep the reports, the agents' probability vectors and the mediator's decision,
margin, energy terms, action, steer target and features, certified and budget flags;
the posteriors, weights and pooled vectors are left out (a replay recomputes them from
the probabilities and the cell's panel).
"""
from __future__ import annotations

import datetime as _dt
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import duckdb
import pandas as pd

from dcem import strict_json
from common.errors import InputError
from common.fields import Text, check
from dcem.store.database import Store
from dcem.store.export_manifest import FORMAT, MANIFEST, TABLES, check_manifest, check_models, check_runs
from common.table_export import copy_query
from dcem.store.export_tables import read_tables

__all__ = ["FORMAT", "MANIFEST", "TABLES", "TURN_KEY", "RunExport", "write_run_export", "load_run_export"]

_IN_RUNS = "run_id IN (SELECT run_id FROM _export_runs)"
_TRACE_COLUMNS = ("run_id, case_id, method, round, reports, probabilities, decision, runner_up, margin, "
                  "energy, e_disagreement, e_risk, e_margin, descent, action, steer_agent, steer_current, "
                  "steer_alternative, steer_features, certified, budget")
# table name -> the query that selects the exported runs' rows, in a fixed order
_QUERIES: dict[str, str] = {
    "cells": "SELECT run_id, scenario, seed, labels, confusion, prior, loss, high_risk, config_json, info_json "
             f"FROM cells WHERE {_IN_RUNS} ORDER BY run_id, scenario, seed",
    "cases": "SELECT c.run_id, c.case_id, c.scenario, c.seed, c.truth, t.source_id, t.text FROM cases c "
             f"LEFT JOIN case_texts t USING (run_id, case_id) WHERE c.{_IN_RUNS} ORDER BY c.run_id, c.case_id",
    "traces": f"SELECT {_TRACE_COLUMNS} FROM traces WHERE {_IN_RUNS} ORDER BY run_id, case_id, method, round",
    "outcomes": "SELECT o.*, c.scenario, c.seed FROM outcomes o JOIN cases c USING (run_id, case_id) "
                f"WHERE o.{_IN_RUNS} ORDER BY o.run_id, o.case_id, o.method",
    "metrics": "SELECT run_id, scenario, seed, method, metric, value FROM metrics "
               f"WHERE {_IN_RUNS} ORDER BY run_id, scenario, seed, method, metric",
    # {stored}: the store's own examples column (NULL before migration 004); the caller's
    # examples (``_export_turn_examples``, read from a call log) take precedence
    "turns": "SELECT t.run_id, t.case_id, t.method, t.round, t.agent, t.note, t.reply, t.label, t.error, t.cached, "
             "COALESCE(x.examples_json, {stored}) AS examples_json FROM agent_turns t "
             "LEFT JOIN _export_turn_examples x ON x.run_id = t.run_id AND x.case_id = t.case_id "
             "AND x.method = t.method AND x.round = t.round AND x.agent = t.agent "
             f"WHERE t.{_IN_RUNS} ORDER BY t.run_id, t.case_id, t.method, t.round, t.agent",
    "ablation": "SELECT run_id, scenario, seed, xi, horizon, metric, value FROM ablation "
                f"WHERE {_IN_RUNS} ORDER BY run_id, scenario, seed, xi, horizon, metric",
}
TURN_KEY = ["run_id", "case_id", "method", "round", "agent"]  # the columns that name one agent turn


@dataclass(frozen=True)
class RunExport:
    """An export read back: the manifest and one DataFrame per table (see :data:`TABLES`)."""

    directory: Path
    manifest: dict[str, Any]
    cells: pd.DataFrame
    cases: pd.DataFrame
    traces: pd.DataFrame
    outcomes: pd.DataFrame
    metrics: pd.DataFrame
    turns: pd.DataFrame
    ablation: pd.DataFrame

    @property
    def run_ids(self) -> list[str]:
        return [str(r["run_id"]) for r in self.manifest["runs"]]

    def run(self, run_id: str) -> dict[str, Any]:
        """The manifest entry of one run (kind, spec, config ...)."""
        for entry in self.manifest["runs"]:
            if entry["run_id"] == run_id:
                return dict(entry)
        raise InputError("run", f"the export {self.directory} has no run {run_id!r}")


def _run_entries(store: Store, run_ids: list[str]) -> list[dict[str, Any]]:
    entries = []
    for run_id in run_ids:
        store.check_run(run_id)
        kind, spec, config, seeds, rev, created, finished, status = store.con.execute(
            "SELECT kind, spec_json, config_json, seeds, git_revision, created_at, finished_at, status "
            "FROM runs WHERE run_id = ?", [run_id]).fetchone()
        entries.append({"run_id": run_id, "kind": kind, "status": status, "spec": json.loads(spec),
                        "config": json.loads(config), "seeds": [int(s) for s in seeds], "git_revision": rev,
                        "created_at": str(created), "finished_at": None if finished is None else str(finished)})
    return entries


def _turn_examples_frame(examples: pd.DataFrame | None) -> pd.DataFrame:
    """The caller's per-turn examples (key columns + ``examples_json``), checked: one row a turn."""
    columns = [*TURN_KEY, "examples_json"]
    if examples is None:
        return pd.DataFrame({c: pd.Series(dtype="int64" if c in ("round", "agent") else "object") for c in columns})
    missing = [c for c in columns if c not in examples.columns]
    if missing:
        raise InputError("turn examples", f"the examples frame lacks the columns {', '.join(missing)}")
    frame = examples[columns].reset_index(drop=True)
    if frame.duplicated(TURN_KEY).any():
        raise InputError("turn examples", "the examples frame holds more than one row for a turn")
    return frame


def _has_column(con: duckdb.DuckDBPyConnection, table: str, column: str) -> bool:
    return bool(con.execute("SELECT count(*) FROM information_schema.columns WHERE table_schema = 'main' "
                            "AND table_name = ? AND column_name = ?", [table, column]).fetchall()[0][0])


def _copy_tables(store: Store, run_ids: list[str], directory: Path,
                 turn_examples: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """Each table as ``<name>.parquet`` (written beside and renamed into place)."""
    con = store.con.cursor()
    stored = "t.examples_json" if _has_column(con, "agent_turns", "examples_json") else "NULL::VARCHAR"
    queries = {**_QUERIES, "turns": _QUERIES["turns"].replace("{stored}", stored)}
    try:
        con.register("_export_runs", pd.DataFrame({"run_id": run_ids}))
        con.register("_export_turn_examples", _turn_examples_frame(turn_examples))
        files = [copy_query(con, query, directory, name) for name, query in queries.items()]
    finally:
        con.close()
    return files


def write_run_export(store: Store, run_ids: Sequence[str], directory: str | os.PathLike[str], *,
                     command: str, models: Sequence[Mapping[str, Any]],
                     turn_examples: pd.DataFrame | None = None) -> dict[str, Any]:
    """Write the runs ``run_ids`` of ``store`` into ``directory`` and return the manifest.

    command : the exact command line(s) that made the runs; models : one dict per model
    file the runs used (``key``, ``file``, ``size_bytes``, ``sha256`` or null, ``note``);
    turn_examples : the few-shot examples of agent turns, one row per turn (``run_id``,
    ``case_id``, ``method``, ``round``, ``agent``, ``examples_json``: a JSON list), kept in
    the turns table's ``examples_json`` so an imported run shows them without a call log.
    Existing export files in ``directory`` are replaced; the manifest is written last.
    Raises StoreError for an unknown run and InputError for bad arguments.
    """
    ids = list(dict.fromkeys(str(r) for r in run_ids))
    if not ids:
        raise InputError("run", "give at least one run id to export")
    check("command", command, Text(msg="give the command that made the runs"), error=InputError)
    entries, model_rows = _run_entries(store, ids), check_models(list(models))
    check_runs(entries)  # a run this format cannot carry is refused before any file is written
    target = Path(directory)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError("out", f"cannot create {target}: {exc.strerror or exc}") from None
    manifest = {"format": FORMAT, "created_at": _dt.datetime.now().isoformat(timespec="seconds"),
                "command": command.strip(), "runs": entries, "models": model_rows,
                "files": _copy_tables(store, ids, target, turn_examples)}
    tmp = target / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(target / MANIFEST)
    return manifest


def _read_manifest(directory: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The manifest and its file entries by table, every field checked."""
    if not directory.is_dir():
        raise InputError("export", f"no export directory {directory}")
    path = directory / MANIFEST
    if path.is_symlink() or not path.is_file():
        raise InputError("export", f"{directory} has no {MANIFEST}; it is not a D-CEM run export")
    try:
        manifest = strict_json.loads(path.read_text(encoding="utf-8"), str(path))
    except InputError as exc:  # not JSON, a number no float holds, nested too deeply
        raise InputError("export", f"cannot read {path}: {str(exc)[len(str(path)) + 2:]}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError("export", f"cannot read {path}: {exc}") from None
    return manifest, check_manifest(manifest, str(path))


def load_run_export(directory: str | os.PathLike[str], progress: Progress | None = None) -> RunExport:
    """Read an export written by :func:`write_run_export`: every manifest field, each
    file's size, sha256, row count and schema, keys and the rows' runs, cells and cases
    are checked (:mod:`dcem.store.export_manifest`, :mod:`dcem.store.export_tables`);
    InputError naming the field or file otherwise.  ``progress(done, total, label)`` hears
    of each table read (:func:`~dcem.store.export_tables.read_tables`)."""
    where = Path(directory)
    manifest, files = _read_manifest(where)
    return RunExport(directory=where, manifest=manifest, **read_tables(where, files, manifest, progress))
