"""Merging one project store file into another: a long experiment split over processes.

DuckDB lets one process write a file, so an experiment split over two processes or two
machines (one group of an evaluation each, one dataset of a grid each) writes two
store files.  :func:`merge_store` copies into the target every row of the source that
the target does not hold yet, table by table, matched on each table's primary key, in
one transaction: all of it or, on any error, nothing.

- A row whose key both files hold is kept as the target has it.  Those whose content
  differs are counted per table and reported (for example a part re-recorded by a
  resume, with a later time); nothing is overwritten, except where :data:`PRECEDENCE`
  says the source's row is the truer one: a peak measured by each process (the peak RSS
  of an evaluation group run in two processes is the larger of the two), and a run that
  one file holds as finished and the other as still running (a copy taken before the run
  ended, or a resume that stopped early): finished in either file, it is finished.
- Both files must hold the same tables: every migration the source has applied must be
  applied in the target, and each table must have the same columns in both (open the
  target once with the command that wrote the source to upgrade it).
- Merging the same file again adds nothing.
- The call log is keyed by call id: two processes that made the same call keep both
  rows, since each was a real call (a repeated call is answered from the newest).
- The source is only read; a source still held by a running process is refused.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import duckdb

from common.db import Database, StoreBusyError, StoreError

__all__ = ["Precedence", "PRECEDENCE", "TableMerge", "MergeReport", "merge_store"]

_ALIAS = "merge_source"
_MIGRATIONS = "schema_migrations"


@dataclass(frozen=True)
class Precedence:
    """When both files hold a row of one key, the source's row ``s`` replaces the
    target's row ``t`` where the SQL condition ``when`` holds; ``why`` says so in the report."""

    when: str
    why: str


_FINISHED = Precedence("s.status = 'finished' AND t.status <> 'finished'", "finished in the source")
PRECEDENCE: dict[str, Precedence] = {
    "sag_eval_cost": Precedence("s.peak_rss_mb > t.peak_rss_mb", "the source's larger peak_rss_mb"),
    "sag_runs": _FINISHED,
    "runs": _FINISHED,
}


@dataclass(frozen=True)
class TableMerge:
    """What merging did to one table: rows added, source rows whose key the target
    already held, how many of those differ in content (kept as the target has them) and
    how many replaced the target's row (by the table's :data:`PRECEDENCE`)."""

    table: str
    added: int
    present: int
    differing: int
    replaced: int = 0


@dataclass(frozen=True)
class MergeReport:
    """The outcome of one :func:`merge_store`, table by table (tables in name order)."""

    source: Path
    tables: tuple[TableMerge, ...]

    @property
    def added(self) -> int:
        return sum(t.added for t in self.tables)

    @property
    def differing(self) -> int:
        return sum(t.differing for t in self.tables)

    @property
    def replaced(self) -> int:
        return sum(t.replaced for t in self.tables)

    def lines(self) -> list[str]:
        """One line per table with rows in the source, then a total."""
        out = []
        for t in self.tables:
            if t.added or t.present:
                note = f"; {t.differing} of them differ, kept as the target has them" if t.differing else ""
                if t.replaced:
                    note += f"; {t.replaced} replaced: {PRECEDENCE[t.table].why}"
                out.append(f"  {t.table}: {t.added} added, {t.present} already there{note}")
        out.append(f"{_rows(self.added)} added from {self.source.name}"
                   + (f"; {_rows(self.differing)} differ and were left as they were" if self.differing else "")
                   + (f"; {_rows(self.replaced)} replaced by the source's (a larger measurement, a finished run)"
                      if self.replaced else ""))
        return out


def _rows(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _attach(cur: duckdb.DuckDBPyConnection, source: Path) -> None:
    literal = "'" + str(source).replace("'", "''") + "'"
    try:
        cur.execute(f"ATTACH {literal} AS {_ALIAS} (READ_ONLY)")
    except duckdb.Error as exc:
        if "lock" in str(exc).lower():
            raise StoreBusyError(f"the store {source.name} is in use by another program; stop the run "
                                 "writing it before merging it") from None
        raise StoreError(f"cannot read {source.name} as a store: {str(exc).splitlines()[0]}") from None


def _columns(cur: duckdb.DuckDBPyConnection, catalog: str) -> dict[str, list[tuple[str, str]]]:
    rows = cur.execute("SELECT table_name, column_name, data_type FROM information_schema.columns "
                       "WHERE table_catalog = ? AND table_schema = 'main' ORDER BY table_name, ordinal_position",
                       [catalog]).fetchall()
    out: dict[str, list[tuple[str, str]]] = {}
    for table, column, dtype in rows:
        out.setdefault(table, []).append((column, dtype))
    return out


def _keys(cur: duckdb.DuckDBPyConnection, catalog: str) -> dict[str, list[str]]:
    rows = cur.execute("SELECT table_name, constraint_column_names FROM duckdb_constraints() "
                       "WHERE database_name = ? AND constraint_type = 'PRIMARY KEY'", [catalog]).fetchall()
    return {table: list(columns) for table, columns in rows}


def _migrations(cur: duckdb.DuckDBPyConnection, prefix: str) -> set[str]:
    return {r[0] for r in cur.execute(f"SELECT name FROM {prefix}{_MIGRATIONS}").fetchall()}  # noqa: S608


def _plan(cur: duckdb.DuckDBPyConnection, source: Path) -> dict[str, list[str]]:
    """The source's tables with their key columns, once the two schemas are checked."""
    target_db = cur.execute("SELECT current_database()").fetchone()[0]
    theirs, ours = _columns(cur, _ALIAS), _columns(cur, target_db)
    if _MIGRATIONS not in theirs:
        raise StoreError(f"{source.name} is not a store of this project (it has no {_MIGRATIONS} table)")
    if _MIGRATIONS not in ours:
        raise StoreError("the target store has no tables yet; open it once with the command that wrote "
                         f"{source.name}, or copy {source.name} instead of merging it")
    missing = sorted(_migrations(cur, f"{_ALIAS}.") - _migrations(cur, ""))
    if missing:
        raise StoreError(f"{source.name} has tables the target lacks (migrations {', '.join(missing)}); "
                         "open the target once with the command that wrote the source, then merge again")
    keys = _keys(cur, _ALIAS)
    plan: dict[str, list[str]] = {}
    for table in sorted(t for t in theirs if t != _MIGRATIONS):
        if ours.get(table) != theirs[table]:
            raise StoreError(f"table {table} has different columns in {source.name} and in the target; "
                             "open both with the same version of the project")
        if table not in keys:
            raise StoreError(f"table {table} has no primary key, so its rows cannot be matched")
        plan[table] = keys[table]
    return plan


def _merge_table(cur: duckdb.DuckDBPyConnection, table: str, key: list[str]) -> TableMerge:
    mine, theirs = _quote(table), f"{_ALIAS}.{_quote(table)}"
    match = " AND ".join(f"t.{_quote(c)} = s.{_quote(c)}" for c in key)
    held = f"EXISTS (SELECT 1 FROM {mine} t WHERE {match})"
    total = cur.execute(f"SELECT count(*) FROM {theirs}").fetchone()[0]  # noqa: S608 (catalog names)
    present = cur.execute(f"SELECT count(*) FROM {theirs} s WHERE {held}").fetchone()[0]  # noqa: S608
    same = cur.execute(f"SELECT count(*) FROM (SELECT * FROM {theirs} INTERSECT "  # noqa: S608
                       f"SELECT * FROM {mine})").fetchone()[0]
    replaced = _drop_superseded(cur, mine, theirs, PRECEDENCE[table], match) if table in PRECEDENCE else 0
    if total > present or replaced:
        cur.execute(f"INSERT INTO {mine} SELECT * FROM {theirs} s WHERE NOT {held}")  # noqa: S608
    return TableMerge(table, int(total - present), int(present), int(present - same - replaced), int(replaced))


def _drop_superseded(cur: duckdb.DuckDBPyConnection, mine: str, theirs: str, rule: Precedence, match: str) -> int:
    """Delete the target's rows that the source's row of the same key supersedes by
    ``rule`` (the caller inserts the source's rows in their place); return how many."""
    return int(cur.execute(f"DELETE FROM {mine} t WHERE EXISTS (SELECT 1 FROM {theirs} s "  # noqa: S608
                           f"WHERE {match} AND {rule.when})").fetchone()[0])


def merge_store(target: Database, source: str | os.PathLike[str]) -> MergeReport:
    """Copy the rows of the store file ``source`` that ``target`` lacks (see the module
    docstring); :class:`StoreError` and no change for a source that cannot be merged."""
    src = Path(source)
    if target.read_only:
        raise StoreError("the target store is open read-only; it cannot take merged rows")
    if not src.is_file():
        raise StoreError(f"no store file {src}")
    if src.resolve() == Path(target.path).resolve():
        raise StoreError("a store cannot be merged into itself")
    cur = target.con.cursor()
    try:
        _attach(cur, src)
        try:
            plan = _plan(cur, src)
            cur.execute("BEGIN TRANSACTION")
            try:
                done = tuple(_merge_table(cur, table, key) for table, key in plan.items())
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
        finally:
            cur.execute(f"DETACH {_ALIAS}")
    except duckdb.Error as exc:
        raise StoreError(f"merging {src.name} failed, nothing was changed: {str(exc).splitlines()[0]}") from None
    finally:
        cur.close()
    return MergeReport(src, done)
