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
- The source is only read; a source still held by a running process is refused, and so
  is a file that is not a DuckDB store (its header is read before DuckDB opens it, so a
  SQLite file never makes DuckDB fetch an extension).
- Every row the merge brings in must keep the rules of its table (:mod:`common.merge_checks`:
  values in their domain, child rows belonging to a run and item that exist, a run both
  files hold defined alike in both); the first row that does not refuses the whole merge,
  naming the table, the row's key and the column.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import duckdb

from common.db import Database, StoreBusyError, StoreError
from common.work import Progress
from common.interrupts import deferred_interrupt, is_interrupt
from common.merge_checks import SOURCE, MergeRefused, RowCheck, find_broken, quote

__all__ = ["Precedence", "PRECEDENCE", "TableMerge", "MergeReport", "merge_store", "require_duckdb_file",
           "RowCheck", "MergeRefused"]

_ALIAS = SOURCE
_MIGRATIONS = "schema_migrations"
_MAGIC = b"DUCK"  # a DuckDB file's magic bytes, at offset 8 (after the header's checksum)
_MAGIC_AT = 8
_SQLITE = b"SQLite format 3\x00"


@dataclass(frozen=True)
class Precedence:
    """When both files hold a row of one key, the source's row ``s`` gives the target's
    row ``t`` its values of the columns ``changes`` where the SQL condition ``when`` holds
    (the other columns stay the target's); ``why`` says so in the report."""

    when: str
    why: str
    changes: tuple[str, ...]


_FINISHED = Precedence("s.status = 'finished' AND t.status <> 'finished'", "finished in the source",
                       ("status", "finished_at"))
PRECEDENCE: dict[str, Precedence] = {
    "sag_eval_cost": Precedence("s.peak_rss_mb > t.peak_rss_mb", "the source's larger peak_rss_mb",
                                ("peak_rss_mb", "weights_json", "measured_at")),
    "sag_runs": _FINISHED,
    "runs": _FINISHED,
    "train_runs": Precedence("s.status = 'finished' AND t.status <> 'finished'", "finished in the source",
                             ("status", "finished_at", "adapter_file", "adapter_sha256")),
    "ledger_runs": _FINISHED,
    "ledger_units": Precedence("s.state = 'done' AND t.state <> 'done'", "done in the source",
                               ("state", "message", "updated_at")),
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


_quote = quote


def require_duckdb_file(path: Path, what: str) -> None:
    """StoreError unless ``path`` starts like a DuckDB file (read before DuckDB opens it,
    which would otherwise guess the format of a foreign file and fetch a reader for it)."""
    try:
        with path.open("rb") as f:
            head = f.read(_MAGIC_AT + len(_MAGIC))
    except OSError as exc:
        raise StoreError(f"cannot read {what} {path.name}: {exc.strerror or exc}") from None
    if head[_MAGIC_AT:] == _MAGIC:
        return
    if not head:
        kind = "it is empty"
    elif len(head) < _MAGIC_AT + len(_MAGIC):
        kind = f"it holds only {len(head)} bytes"
    elif head == _SQLITE[:len(head)]:
        kind = "it is a SQLite database"
    else:
        kind = "its header lacks DuckDB's magic bytes"
    raise StoreError(f"{what} {path.name} is not a DuckDB store file ({kind}); only store files this "
                     "project wrote can be merged")


def _attach(cur: duckdb.DuckDBPyConnection, source: Path) -> None:
    try:
        cur.execute(f"ATTACH ? AS {_ALIAS} (TYPE DUCKDB, READ_ONLY)", [str(source)])
    except duckdb.Error as exc:
        if "lock" in str(exc).lower():
            raise StoreBusyError(f"the store {source.name} is in use by another program; stop the run "
                                 "writing it before merging it") from None
        raise StoreError(f"cannot read {source.name} as a store: {str(exc).splitlines()[0]}") from None


Columns = dict[str, list[tuple[str, str]]]


def _columns(cur: duckdb.DuckDBPyConnection, catalogs: tuple[str, str]) -> list[Columns]:
    """Each catalog's tables with their columns and types, in order."""
    rows = cur.execute("SELECT database_name, table_name, column_name, data_type FROM duckdb_columns() "
                       "WHERE database_name IN (?, ?) AND schema_name = 'main' "
                       "ORDER BY table_name, column_index", list(catalogs)).fetchall()
    out: list[Columns] = [{}, {}]
    for catalog, table, column, dtype in rows:
        out[catalogs.index(catalog)].setdefault(table, []).append((column, dtype))
    return out


def _keys(cur: duckdb.DuckDBPyConnection, catalog: str) -> dict[str, list[str]]:
    rows = cur.execute("SELECT table_name, constraint_column_names FROM duckdb_constraints() "
                       "WHERE database_name = ? AND constraint_type = 'PRIMARY KEY'", [catalog]).fetchall()
    return {table: list(columns) for table, columns in rows}


def _migrations(cur: duckdb.DuckDBPyConnection, prefix: str) -> set[str]:
    return {r[0] for r in cur.execute(f"SELECT name FROM {prefix}{_MIGRATIONS}").fetchall()}  # noqa: S608


def _plan(cur: duckdb.DuckDBPyConnection, source: Path) -> tuple[dict[str, list[str]], frozenset[str]]:
    """The source's tables with their key columns, once the two schemas are checked, and
    the target's tables."""
    target_db = cur.execute("SELECT current_database()").fetchone()[0]
    theirs, ours = _columns(cur, (_ALIAS, target_db))
    if _MIGRATIONS not in theirs:
        raise StoreError(f"{source.name} is not a store of this project (it has no {_MIGRATIONS} table)")
    if _MIGRATIONS not in ours:
        raise StoreError("the target store has no tables yet; open it once with the command that wrote "
                         f"{source.name}, or copy {source.name} instead of merging it")
    missing = sorted(_migrations(cur, f"{_ALIAS}.") - _migrations(cur, ""))
    if missing:
        raise StoreError(f"{source.name} has tables the target lacks (migrations {', '.join(missing)}); "
                         "open the target once with the command that wrote the source, then merge again")
    keys, our_keys = _keys(cur, _ALIAS), _keys(cur, target_db)
    plan: dict[str, list[str]] = {}
    for table in sorted(t for t in theirs if t != _MIGRATIONS):
        if ours.get(table) != theirs[table]:
            raise StoreError(f"table {table} has different columns in {source.name} and in the target; "
                             "open both with the same version of the project")
        if table not in keys:
            raise StoreError(f"table {table} has no primary key, so its rows cannot be matched")
        if keys[table] != our_keys.get(table):
            raise StoreError(f"table {table} has a different primary key in {source.name} and in the target")
        plan[table] = keys[table]
    return plan, frozenset(ours)


@dataclass(frozen=True)
class _Step:
    """One table's part of a merge, counted before anything is written."""

    table: str
    key: list[str]
    total: int
    present: int
    same: int
    superseding: int

    @property
    def mine(self) -> str:
        return _quote(self.table)

    @property
    def theirs(self) -> str:
        return f"{_ALIAS}.{_quote(self.table)}"

    @property
    def match(self) -> str:
        return " AND ".join(f"t.{_quote(c)} = s.{_quote(c)}" for c in self.key)

    @property
    def held(self) -> str:
        return f"EXISTS (SELECT 1 FROM {self.mine} t WHERE {self.match})"

    @property
    def supersedes(self) -> str:
        rule = PRECEDENCE.get(self.table)
        return f"EXISTS (SELECT 1 FROM {self.mine} t WHERE {self.match} AND {rule.when})" if rule else "false"

    def incoming(self) -> str:
        """SQL of the source's rows this merge brings: those the target lacks and those that
        supersede the target's."""
        return (f"(SELECT * FROM {self.theirs} s WHERE NOT {self.held} "  # noqa: S608 (catalog names)
                f"OR {self.supersedes})")

    def brings(self) -> bool:
        return self.total > self.present or self.superseding > 0


def _count(cur: duckdb.DuckDBPyConnection, plan: dict[str, list[str]]) -> list[_Step]:
    """Every table's step: its rows in the source, those whose key the target holds (and
    how many of them are identical there) and those that supersede the target's."""
    steps = [_Step(table, key, 0, 0, 0, 0) for table, key in plan.items()]
    if not steps:
        return []
    found = cur.execute(" UNION ALL ".join(  # noqa: S608 (catalog names)
        f"SELECT {i}, count(*), count(*) FILTER (WHERE {s.held}), count(*) FILTER (WHERE {s.supersedes}) "
        f"FROM {s.theirs} s" for i, s in enumerate(steps))).fetchall()
    out = []
    for i, total, present, superseding in sorted(found):
        step = steps[i]
        same = cur.execute(f"SELECT count(*) FROM (SELECT * FROM {step.theirs} INTERSECT "  # noqa: S608
                           f"SELECT * FROM {step.mine})").fetchone()[0] if present else 0
        out.append(_Step(step.table, step.key, int(total), int(present), int(same), int(superseding)))
    return out


def _merge_table(cur: duckdb.DuckDBPyConnection, step: _Step) -> TableMerge:
    replaced = _take_superseding(cur, step) if step.superseding else 0
    if step.total > step.present:
        cur.execute(f"INSERT INTO {step.mine} SELECT * FROM {step.theirs} s "  # noqa: S608 (catalog names)
                    f"WHERE NOT {step.held}")
    return TableMerge(step.table, step.total - step.present, step.present,
                      step.present - step.same - replaced, replaced)


def _take_superseding(cur: duckdb.DuckDBPyConnection, step: _Step) -> int:
    """Give the target's rows that the source's row of the same key supersedes (by the
    table's :data:`PRECEDENCE`) the source's values of the rule's columns; return how many."""
    rule = PRECEDENCE[step.table]
    assign = ", ".join(f"{_quote(c)} = s.{_quote(c)}" for c in rule.changes)
    return int(cur.execute(f"UPDATE {step.mine} t SET {assign} FROM {step.theirs} s "  # noqa: S608
                           f"WHERE {step.match} AND {rule.when}").fetchone()[0])


def _merge_all(cur: duckdb.DuckDBPyConnection, src: Path, plan: dict[str, list[str]], tables: frozenset[str],
               checks: Sequence[RowCheck], progress: Progress | None = None) -> tuple[TableMerge, ...]:
    """Count, check every incoming row, then write (inside the caller's transaction);
    ``progress`` hears of the checks and of each table written."""
    steps = _count(cur, plan)
    if progress is not None:
        progress(0, len(steps) + 1, "checking every incoming row")
    find_broken(cur, src.name, plan, {s.table: s.incoming() for s in steps if s.brings()},
                {s.table for s in steps if s.present}, checks, tables)
    done = []
    for i, step in enumerate(steps):
        if progress is not None:
            progress(i + 1, len(steps) + 1, f"merging {step.table}")
        done.append(_merge_table(cur, step) if step.total else TableMerge(step.table, 0, 0, 0))
    return tuple(done)


def _rollback(cur: duckdb.DuckDBPyConnection) -> None:
    """Roll back the merge's transaction; DuckDB may have ended it already (a statement
    stopped by Ctrl-C), which is no error of its own to report."""
    try:
        cur.execute("ROLLBACK")
    except duckdb.TransactionException:
        pass


def merge_store(target: Database, source: str | os.PathLike[str], checks: Sequence[RowCheck],
                progress: Progress | None = None) -> MergeReport:
    """Copy the rows of the store file ``source`` that ``target`` lacks (see the module
    docstring), each checked by the rules ``checks`` of its table (a table with rows to
    bring and no rule is refused); :class:`StoreError` (:class:`MergeRefused` for a row
    that breaks a rule) and no change for a source that cannot be merged."""
    src = Path(source)
    if target.read_only:
        raise StoreError("the target store is open read-only; it cannot take merged rows")
    if not src.is_file():
        raise StoreError(f"no store file {src}")
    if src.resolve() == Path(target.path).resolve():
        raise StoreError("a store cannot be merged into itself")
    require_duckdb_file(src, "the source")
    cur = target.con.cursor()
    try:
        _attach(cur, src)
        try:
            plan, tables = _plan(cur, src)
            cur.execute("BEGIN TRANSACTION")
            try:
                done = _merge_all(cur, src, plan, tables, checks, progress)
                with deferred_interrupt():  # a Ctrl-C cannot split the commit from its report
                    cur.execute("COMMIT")
            except BaseException:
                with deferred_interrupt():
                    _rollback(cur)
                raise
        finally:
            with deferred_interrupt():
                cur.execute(f"DETACH {_ALIAS}")
    except (duckdb.Error, RuntimeError) as exc:
        if is_interrupt(exc):  # Ctrl-C inside a statement: DuckDB's RuntimeError, rolled back above
            raise KeyboardInterrupt from None
        if not isinstance(exc, duckdb.Error):
            raise
        raise StoreError(f"merging {src.name} failed, nothing was changed: {str(exc).splitlines()[0]}") from None
    finally:
        cur.close()
    return MergeReport(src, done)
