"""The rules a merged row must keep, and the check that applies them before anything is written.

:func:`common.store_merge.merge_store` is generic: it copies rows table by table.  What a
row of a table may hold is known to the package that owns the table, which states it as
:class:`RowCheck` rules (the SAG tables' in :mod:`sag.store.merge_checks`, D-CEM's in
:mod:`dcem.store.merge_checks`, the call log's in :mod:`runtime.merge_checks`) and hands
them to the merge.  Every row the merge would bring into the target (a row the target
lacks, or one that supersedes the target's by :data:`common.store_merge.PRECEDENCE`) must
keep every rule of its table; a source table with rows to bring and no rule is refused,
since nothing vouches for its rows.  The first broken rule refuses the whole merge with a
:class:`MergeRefused` naming the table, the row's key, the column and its value.

A rule's condition is SQL over the incoming row ``r``; ``{table}`` in it reads another
table as it will be after the merge (the target's rows and the source's rows the target
lacks), so a child row may belong to a parent that arrives in the same merge.  A rule with
``held=True`` is for a key both files hold: ``s`` is the source's row and ``t`` the
target's (say, a run both files hold must have the same configuration in both).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Collection, Mapping, Sequence

import duckdb

from common.db import StoreError

__all__ = ["RowCheck", "MergeRefused", "Bad", "find_broken", "quote", "SOURCE", "counts", "number", "numbers",
           "json_text", "one_of", "belongs", "same_in_both"]

SOURCE = "merge_source"  # the attached source's catalog name
_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
_TABLE_REF = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_VALUE_CHARS = 60

Bad = str | Callable[[frozenset[str]], str]
"""A rule's condition: SQL, or a function of the target's table names that returns it."""


class MergeRefused(StoreError):
    """A row of the source breaks a rule of its table; the merge wrote nothing."""

    def __init__(self, source: str, table: str, key: str, column: str, value: str, why: str) -> None:
        self.table, self.key, self.column = table, key, column
        super().__init__(f"{source} was not merged (nothing was changed): table {table}, row {key}: "
                         f"{column} = {value}: {why}")


@dataclass(frozen=True)
class RowCheck:
    """A rule every incoming row of ``table`` keeps: ``bad`` (SQL over the row ``r``) holds
    for a row that breaks it; the refusal names ``column`` and says ``why``."""

    table: str
    column: str
    bad: Bad
    why: str
    held: bool = False

    def __post_init__(self) -> None:
        for field, value in (("table", self.table), ("column", self.column)):
            if not _NAME.match(value):
                raise ValueError(f"RowCheck {field} must be a plain SQL name, got {value!r}")
        if not self.why:
            raise ValueError("RowCheck why must say what the value must be")

    def condition(self, tables: frozenset[str]) -> str:
        return self.bad if isinstance(self.bad, str) else self.bad(tables)


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _after_merge(table: str, plan: Mapping[str, Sequence[str]]) -> str:
    """SQL for ``table`` as it will be after the merge: the target's rows and the source's
    rows whose key the target lacks."""
    mine = quote(table)
    if table not in plan:
        return mine
    match = " AND ".join(f"y.{quote(c)} = x.{quote(c)}" for c in plan[table])
    return (f"(SELECT * FROM {mine} UNION ALL SELECT * FROM {SOURCE}.{mine} x "  # noqa: S608 (catalog names)
            f"WHERE NOT EXISTS (SELECT 1 FROM {mine} y WHERE {match}))")


def _expand(sql: str, plan: Mapping[str, Sequence[str]], tables: frozenset[str]) -> str:
    def table(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in tables:
            raise StoreError(f"a merge rule reads the table {name}, which the target store lacks")
        return _after_merge(name, plan)
    return _TABLE_REF.sub(table, sql)


def _show(value: object, *, quoted: bool = True) -> str:
    """The value on one line (control characters escaped), cut to a readable length."""
    text = repr(value) if quoted else "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(value))
    return text if len(text) <= _VALUE_CHARS else text[:_VALUE_CHARS - 3] + "..."


def _first_broken(cur: duckdb.DuckDBPyConnection, rows: str, key: Sequence[str], alias: str,
                  checks: Sequence[RowCheck], conditions: Sequence[str]) -> tuple[RowCheck, tuple[object, ...]] | None:
    """The first rule (in order) some row of ``rows`` breaks, with that row's key and value."""
    which = " ".join(f"WHEN ({c}) THEN {i}" for i, c in enumerate(conditions))
    keys = ", ".join(f"{alias}.{quote(c)} AS k{i}" for i, c in enumerate(key))
    values = ", ".join(f"CAST({alias}.{quote(ch.column)} AS VARCHAR)" for ch in checks)
    order = ", ".join(f"k{i}" for i in range(len(key)))
    found = cur.execute(f"SELECT rule, {order}, vals[rule + 1] FROM (SELECT CASE {which} END AS rule, "  # noqa: S608
                        f"{keys}, [{values}] AS vals FROM {rows}) WHERE rule IS NOT NULL "
                        f"ORDER BY rule, {order} LIMIT 1").fetchone()
    if found is None:
        return None
    return checks[int(found[0])], tuple(found[1:])


def find_broken(cur: duckdb.DuckDBPyConnection, source: str, plan: Mapping[str, Sequence[str]],
                incoming: Mapping[str, str], held: Collection[str], checks: Sequence[RowCheck],
                tables: frozenset[str]) -> None:
    """Raise :class:`MergeRefused` for the first broken rule.  ``incoming`` maps each table
    with rows to bring to the SQL of those rows (alias ``r``); ``held`` names the tables
    with keys both files hold; ``plan`` maps the source's tables to their key columns;
    ``tables`` names the target's tables."""
    order = list(dict.fromkeys([c.table for c in checks] + list(incoming)))
    for table in (t for t in order if t in held):
        both = [c for c in checks if c.table == table and c.held]
        if both:
            match = " AND ".join(f"t.{quote(c)} = s.{quote(c)}" for c in plan[table])
            pairs = f"{SOURCE}.{quote(table)} s JOIN {quote(table)} t ON {match}"
            _refuse_first(cur, source, table, plan[table], pairs, "s", both, tables, plan)
    for table in (t for t in order if t in incoming):
        mine = [c for c in checks if c.table == table and not c.held]
        if not mine:
            raise StoreError(f"{source} holds rows of table {table}, which this command has no rules to check; "
                             "merge it with the command of the program that wrote it")
        _refuse_first(cur, source, table, plan[table], f"{incoming[table]} r", "r", mine, tables, plan)


def _refuse_first(cur: duckdb.DuckDBPyConnection, source: str, table: str, key: Sequence[str], rows: str,
                  alias: str, checks: Sequence[RowCheck], tables: frozenset[str],
                  plan: Mapping[str, Sequence[str]]) -> None:
    conditions = [_expand(c.condition(tables), plan, tables) for c in checks]
    broken = _first_broken(cur, rows, key, alias, checks, conditions)
    if broken is not None:
        check, found = broken
        shown = ", ".join(f"{k}={_show(v)}" for k, v in zip(key, found[:-1]))
        value = "NULL" if found[-1] is None else _show(found[-1], quoted=False)
        raise MergeRefused(source, table, f"({shown})", check.column, value, check.why)


# ----------------------------------------------------------- rules of common kinds


def counts(table: str, *columns: str, nullable: bool = False) -> list[RowCheck]:
    """Each column a non-negative integer (NULL allowed when ``nullable``)."""
    return [RowCheck(table, c, f"r.{c} < 0" if nullable else f"r.{c} IS NULL OR r.{c} < 0",
                     "must be a non-negative whole number" + (" or empty" if nullable else "")) for c in columns]


def _range(v: str, low: float | None, high: float | None) -> str:
    parts = [f"NOT isfinite({v})"]
    if low is not None:
        parts.append(f"{v} < {low!r}")
    if high is not None:
        parts.append(f"{v} > {high!r}")
    return " OR ".join(parts)


def _span(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"a finite number in [{low:g}, {high:g}]"
    return f"a finite number >= {low:g}" if low is not None else "a finite number"


def number(table: str, column: str, low: float | None = 0.0, high: float | None = None, *,
           nullable: bool = False) -> RowCheck:
    """A finite number within [low, high] (None: unbounded on that side)."""
    bad = f"{_range('r.' + column, low, high)}"
    return RowCheck(table, column, bad if nullable else f"r.{column} IS NULL OR {bad}",
                    f"must be {_span(low, high)}" + (" or empty" if nullable else ""))


def numbers(table: str, column: str, low: float | None = 0.0, high: float | None = None, *, depth: int = 1,
            nullable: bool = False) -> RowCheck:
    """A list (``depth`` levels deep) of finite numbers within [low, high], no element missing."""
    flat, holes = f"r.{column}", []
    for _ in range(depth - 1):
        holes.append(f"len(list_filter({flat}, lambda x: x IS NULL)) > 0")
        flat = f"flatten({flat})"
    holes.append(f"len(list_filter({flat}, lambda v: v IS NULL OR {_range('v', low, high)})) > 0")
    bad = f"coalesce({' OR '.join(holes)}, true)"
    return RowCheck(table, column, f"r.{column} IS NOT NULL AND {bad}" if nullable else bad,
                    f"must be a list of numbers, each {_span(low, high)}" + (" (or no list)" if nullable else ""))


def json_text(table: str, column: str, *, nullable: bool = False) -> RowCheck:
    """Valid JSON text."""
    bad = f"NOT json_valid(r.{column})"
    return RowCheck(table, column, bad if nullable else f"r.{column} IS NULL OR {bad}",
                    "must be JSON text" + (" or empty" if nullable else ""))


def one_of(table: str, column: str, values: Sequence[str], *, nullable: bool = False) -> RowCheck:
    """One of the words ``values``."""
    listed = ", ".join("'" + v.replace("'", "''") + "'" for v in values)
    bad = f"r.{column} NOT IN ({listed})"
    return RowCheck(table, column, bad if nullable else f"r.{column} IS NULL OR {bad}",
                    f"must be one of {', '.join(values)}" + (" or empty" if nullable else ""))


def belongs(table: str, parent: str, columns: Sequence[str], why: str) -> RowCheck:
    """The row's ``columns`` name a row of ``parent`` (same column names) after the merge."""
    match = " AND ".join(f"p.{c} = r.{c}" for c in columns)
    return RowCheck(table, columns[-1], f"NOT EXISTS (SELECT 1 FROM {{{parent}}} p WHERE {match})", why)


def same_in_both(table: str, *columns: str) -> list[RowCheck]:
    """A key both files hold has the same ``columns`` in both."""
    return [RowCheck(table, c, f"s.{c} IS DISTINCT FROM t.{c}", "differs from the target's row of this key "
                     "(the same key must mean the same thing in both files)", held=True) for c in columns]
