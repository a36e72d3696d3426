"""The Parquet files of a run export, checked against its manifest and each other.

:func:`read_tables` reads the seven tables of an export whose manifest
:func:`~dcem.store.export_manifest.check_manifest` accepted, and refuses with an
:class:`~common.errors.InputError` naming the file (and the column or key) when

- a file is missing, is a link, or differs from the manifest in size or sha256
  (:func:`common.export_schema.check_file`, the check every export reader makes);
- DuckDB cannot read it, or its columns and types are not the table's schema
  (:data:`SCHEMAS`, checked by :func:`common.export_schema.check_columns` like every
  other export's; the turns table of an older export may lack the note, reply and
  few-shot columns, which then read as empty);
- its row count is not the manifest's;
- a key column is empty or a key is held by more than one row (:data:`KEYS`), a
  required column is empty, or a number that must be finite is NaN or infinite;
- a row belongs to no run of the manifest, a cell to no planned (scenario, seed) of its
  run, a case to no cell, a trace, outcome or agent turn to no case, a metric or
  ablation row to no cell, or a label index lies outside its cell's labels.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import duckdb
import pandas as pd

from common.errors import InputError
from common.work import Progress
from common.export_schema import Schema, check_columns, check_file, check_rows, file_sha256, parquet_columns, select_sql
from dcem.store.export_manifest import TABLES, run_cells

__all__ = ["SCHEMAS", "KEYS", "read_tables", "sha256_of"]

_S, _I, _D, _B = "VARCHAR", "INTEGER", "DOUBLE", "BOOLEAN"
# table -> (column, DuckDB type) in the order write_run_export writes them
SCHEMAS: dict[str, Schema] = {
    "cells": (("run_id", _S), ("scenario", _S), ("seed", _I), ("labels", "VARCHAR[]"), ("confusion", "DOUBLE[][][]"),
              ("prior", "DOUBLE[]"), ("loss", "DOUBLE[][]"), ("high_risk", "INTEGER[]"), ("config_json", _S),
              ("info_json", _S)),
    "cases": (("run_id", _S), ("case_id", _S), ("scenario", _S), ("seed", _I), ("truth", _I), ("source_id", _S),
              ("text", _S)),
    "traces": (("run_id", _S), ("case_id", _S), ("method", _S), ("round", _I), ("reports", "INTEGER[]"),
               ("probabilities", "DOUBLE[][]"), ("decision", _I), ("runner_up", _I), ("margin", _D),
               ("energy", _D), ("e_disagreement", _D), ("e_risk", _D), ("e_margin", _D), ("descent", _D),
               ("action", _S), ("steer_agent", _I), ("steer_current", _I), ("steer_alternative", _I),
               ("steer_features", "VARCHAR[]"), ("certified", _B), ("budget", _B)),
    "outcomes": (("run_id", _S), ("case_id", _S), ("method", _S), ("action", _S), ("decision", _I), ("rounds", _I),
                 ("certified", _B), ("budget", _B), ("truth", _I), ("loss", _D), ("scenario", _S), ("seed", _I)),
    "metrics": (("run_id", _S), ("scenario", _S), ("seed", _I), ("method", _S), ("metric", _S), ("value", _D)),
    "turns": (("run_id", _S), ("case_id", _S), ("method", _S), ("round", _I), ("agent", _I), ("note", _S),
              ("reply", _S), ("label", _I), ("error", _S), ("cached", _B), ("examples_json", _S)),
    "ablation": (("run_id", _S), ("scenario", _S), ("seed", _I), ("xi", _D), ("horizon", _I), ("metric", _S),
                 ("value", _D)),
}
# the turns columns older exports lack, newest first: (note, reply) came before examples_json
_LATER_TURN_COLUMNS = (("examples_json",), ("note", "reply", "examples_json"))
KEYS: dict[str, tuple[str, ...]] = {
    "cells": ("run_id", "scenario", "seed"), "cases": ("run_id", "case_id"),
    "traces": ("run_id", "case_id", "method", "round"), "outcomes": ("run_id", "case_id", "method"),
    "metrics": ("run_id", "scenario", "seed", "method", "metric"),
    "turns": ("run_id", "case_id", "method", "round", "agent"),
    "ablation": ("run_id", "scenario", "seed", "xi", "horizon", "metric"),
}
# columns beside the key that the store requires (NOT NULL)
_REQUIRED: dict[str, tuple[str, ...]] = {
    "cells": ("labels", "confusion", "prior", "loss", "high_risk", "config_json", "info_json"),
    "cases": ("truth",), "traces": ("reports",),
    "outcomes": ("action", "decision", "rounds", "certified", "budget", "truth", "loss", "scenario", "seed"),
    "metrics": (), "turns": ("cached",), "ablation": (),
}
# numbers that must be finite wherever they are not empty (lists are flattened)
_FINITE: dict[str, tuple[str, ...]] = {
    "cells": ("flatten(flatten(confusion))", "prior", "flatten(loss)"),
    "traces": ("flatten(probabilities)", "[margin]", "[energy]", "[e_disagreement]", "[e_risk]", "[e_margin]",
               "[descent]"),
    "outcomes": ("[loss]",), "metrics": ("[value]",), "ablation": ("[xi]", "[value]"),
}
# (child table, its columns, parent table, the parent's columns, what the child row is)
_PARENTS = (
    ("cases", ("run_id", "scenario", "seed"), "cells", ("run_id", "scenario", "seed"), "case"),
    ("traces", ("run_id", "case_id"), "cases", ("run_id", "case_id"), "trace row"),
    ("outcomes", ("run_id", "case_id", "scenario", "seed"), "cases", ("run_id", "case_id", "scenario", "seed"),
     "outcome"),
    ("turns", ("run_id", "case_id"), "cases", ("run_id", "case_id"), "agent turn"),
    ("metrics", ("run_id", "scenario", "seed"), "cells", ("run_id", "scenario", "seed"), "metric"),
    ("ablation", ("run_id", "scenario", "seed"), "cells", ("run_id", "scenario", "seed"), "ablation row"),
)
# (table, label column): a label index of the row's cell
_LABELS = (("cases", "truth"), ("outcomes", "truth"), ("outcomes", "decision"), ("traces", "decision"),
           ("traces", "runner_up"), ("turns", "label"))


sha256_of = file_sha256


def _refuse(name: str, problem: str) -> InputError:
    return InputError("export", f"{name} {problem}")


def _schema(found: list[tuple[str, str]], table: str, name: str) -> Schema:
    """The schema the file's columns ``found`` are read in: the table's, or for the turns
    table of an older export the one without its later columns (read as empty)."""
    want = SCHEMAS[table]
    if table == "turns":
        names = [c for c, _ in found]
        for later in _LATER_TURN_COLUMNS:
            if names == [c for c, _ in want if c not in later]:
                check_columns(found, tuple(c for c in want if c[0] not in later), name)
                return want
    check_columns(found, want, name)
    return want


def _check_rows(con: duckdb.DuckDBPyConnection, table: str, name: str, rows: int) -> None:
    key, finite = KEYS[table], _FINITE.get(table, ())
    empty = (*key, *_REQUIRED[table])
    tests = [f"count_if({c} IS NULL)" for c in empty]
    tests += [f"count_if(len(list_filter({e}, lambda v: v IS NOT NULL AND NOT isfinite(v))) > 0)" for e in finite]
    count, *found = con.execute(f"SELECT count(*), {', '.join(tests)} FROM {table}").fetchone()  # noqa: S608
    check_rows(name, count, rows)
    for column, n in zip(empty, found):
        if n:
            raise _refuse(name, f"has an empty {column!r}")
    twice = con.execute(f"SELECT {', '.join(key)} FROM {table} GROUP BY ALL "  # noqa: S608
                        "HAVING count(*) > 1 LIMIT 1").fetchone()
    if twice is not None:
        raise _refuse(name, f"holds more than one row for the key ({', '.join(map(str, twice))})")
    for expr, n in zip(finite, found[len(empty):]):
        if n:
            raise _refuse(name, f"holds a NaN or infinite number in {expr.strip('[]')!r}")


def _load(con: duckdb.DuckDBPyConnection, directory: Path, table: str, entry: Mapping[str, Any]) -> None:
    name = str(entry["name"])
    path = check_file(directory, entry, name)
    found = parquet_columns(con, path, name)
    want = _schema(found, table, name)
    try:
        con.execute(f"CREATE TABLE {table} AS {select_sql(found, want)}", [str(path)])  # noqa: S608
    except duckdb.Error as exc:
        raise _refuse(name, f"cannot be read: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") \
            from None
    _check_rows(con, table, name, int(entry["rows"]))


def _check_relations(con: duckdb.DuckDBPyConnection, manifest: Mapping[str, Any]) -> None:
    con.execute("CREATE TABLE _planned (run_id VARCHAR, scenario VARCHAR, seed BIGINT, panel INTEGER)")
    con.executemany("INSERT INTO _planned VALUES (?, ?, ?, ?)", run_cells(manifest))
    every = " UNION ALL ".join(f"SELECT '{t}' AS t, run_id FROM (SELECT DISTINCT run_id FROM {t})" for t in TABLES)
    stray = con.execute(f"SELECT t, run_id FROM ({every}) WHERE run_id NOT IN "  # noqa: S608 (fixed names)
                        "(SELECT run_id FROM _planned) LIMIT 1").fetchone()
    if stray is not None:
        raise _refuse(f"{stray[0]}.parquet", f"holds rows of run {stray[1]!r}, which the manifest does not list")
    relations = (("cells", ("run_id", "scenario", "seed"), "_planned", ("run_id", "scenario", "seed"),
                  "cell (not a scenario and seed of its run's spec)"), *_PARENTS)
    for child, cols, parent, pcols, what in relations:
        on = " AND ".join(f"c.{a} = p.{b}" for a, b in zip(cols, pcols))
        row = con.execute(f"SELECT {', '.join('c.' + c for c in cols)} FROM {child} c "  # noqa: S608
                          f"ANTI JOIN {parent} p ON {on} LIMIT 1").fetchone()
        if row is not None:
            raise _refuse(f"{child}.parquet", f"holds a {what} with no {parent.strip('_')} row: "
                                              f"({', '.join(map(str, row))})")
    _check_panels(con)
    for table, column in _LABELS:
        own = table in ("cases", "outcomes")  # the others take their cell from their case
        source = f"{table} t" if own else f"{table} t JOIN cases k ON k.run_id = t.run_id AND k.case_id = t.case_id"
        at = "t" if own else "k"
        row = con.execute(f"SELECT t.run_id, t.case_id, t.{column} FROM {source} JOIN cells l "  # noqa: S608
                          f"ON l.run_id = t.run_id AND l.scenario = {at}.scenario AND l.seed = {at}.seed "
                          f"WHERE t.{column} < 0 OR t.{column} >= len(l.labels) LIMIT 1").fetchone()
        if row is not None:
            raise _refuse(f"{table}.parquet", f"label index {column} = {row[2]} of ({row[0]}, {row[1]}) lies "
                                              "outside its cell's labels")


def _check_panels(con: duckdb.DuckDBPyConnection) -> None:
    """A clinical cell has one confusion matrix per agent of its spec; every trace
    reports and every turn names an agent of its cell's panel."""
    row = con.execute("SELECT c.run_id, c.scenario, c.seed, len(c.confusion), p.panel FROM cells c JOIN _planned p "
                      "USING (run_id, scenario, seed) WHERE p.panel IS NOT NULL AND len(c.confusion) <> p.panel "
                      "LIMIT 1").fetchone()
    if row is not None:
        raise _refuse("cells.parquet", f"cell ({row[0]}, {row[1]}, {row[2]}) has {row[3]} agents' confusion "
                                       f"matrices, its run's spec names {row[4]} agents")
    for table, count in (("traces", "len(t.reports) <> len(l.confusion)"),
                         ("turns", "t.agent < 0 OR t.agent >= len(l.confusion)")):
        row = con.execute(f"SELECT t.run_id, t.case_id FROM {table} t JOIN cases k "  # noqa: S608 (fixed names)
                          "ON k.run_id = t.run_id AND k.case_id = t.case_id JOIN cells l ON l.run_id = k.run_id "
                          f"AND l.scenario = k.scenario AND l.seed = k.seed WHERE {count} LIMIT 1").fetchone()
        if row is not None:
            raise _refuse(f"{table}.parquet", f"a row of ({row[0]}, {row[1]}) names an agent its cell's panel "
                                              "does not have")


def read_tables(directory: Path, files: Mapping[str, Mapping[str, Any]],
                manifest: Mapping[str, Any], progress: Progress | None = None) -> dict[str, pd.DataFrame]:
    """Every table of the export in ``directory`` as a DataFrame (columns as in
    :data:`SCHEMAS`), after the checks above; ``files`` and ``manifest`` as
    :func:`~dcem.store.export_manifest.check_manifest` accepted them.  ``progress(done,
    total, label)`` hears of each table before it is read and of the key checks."""
    con = duckdb.connect()
    try:
        con.execute("SET enable_progress_bar = false")
        for i, table in enumerate(TABLES):
            if progress is not None:
                progress(i, len(TABLES) + 1, f"reading and checking {files[table]['name']}")
            _load(con, directory, table, files[table])
        if progress is not None:
            progress(len(TABLES), len(TABLES) + 1, "checking the tables' keys against each other")
        _check_relations(con, manifest)
        return {t: con.execute(f"SELECT {', '.join(c for c, _ in SCHEMAS[t])} FROM {t}").df()  # noqa: S608
                for t in TABLES}
    finally:
        con.close()
