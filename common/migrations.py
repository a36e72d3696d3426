"""Ordered, named schema migrations, one list per package, in one DuckDB file.

Each package that owns tables declares ``MIGRATIONS: list[tuple[str, list[str]]]`` and
applies them with :func:`migrate` under its own name; a migration is recorded in
``schema_migrations`` as ``"<package>/<name>"`` and applied once, in its package's order,
each in its own transaction.  New schema changes are appended as new migrations;
existing ones are never edited.

Stores written before migrations were kept per package recorded bare names
(``001_...`` to ``004_...``); :data:`LEGACY_NAMES` says which package's migration each
one was, and :func:`migrate` renames those rows once before it looks for pending work.
"""
from __future__ import annotations

import datetime as _dt
from typing import Callable, Sequence

import duckdb

__all__ = ["Migration", "migrate", "applied_migrations", "LEGACY_NAMES"]

Migration = tuple[str, list[str]]

LEGACY_NAMES = {
    "001_runs_cells_cases_traces_outcomes_metrics": "dcem/001_runs_cells_cases_traces_outcomes_metrics",
    "002_presets_reviews": "dcem/002_presets_reviews",
    "003_llm_calls": "runtime/001_llm_calls",
    "004_llm_traces_case_texts_agent_turns": "dcem/003_llm_traces_case_texts_agent_turns",
}


def applied_migrations(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Recorded names (``package/name``) of the migrations already applied, sorted."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (name VARCHAR PRIMARY KEY, applied_at TIMESTAMP NOT NULL)"
    )
    return [r[0] for r in con.execute("SELECT name FROM schema_migrations ORDER BY name").fetchall()]


def _adopt_legacy_names(con: duckdb.DuckDBPyConnection, applied: Sequence[str]) -> None:
    for old in (name for name in applied if name in LEGACY_NAMES):
        con.execute("UPDATE schema_migrations SET name = ? WHERE name = ?", [LEGACY_NAMES[old], old])


def _apply(con: duckdb.DuckDBPyConnection, recorded: str, statements: list[str], now: _dt.datetime) -> None:
    con.execute("BEGIN TRANSACTION")
    try:
        for sql in statements:
            con.execute(sql)
        con.execute("INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)", [recorded, now])
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise


def migrate(con: duckdb.DuckDBPyConnection, package: str, migrations: Sequence[Migration],
            now: Callable[[], _dt.datetime] = _dt.datetime.now) -> list[str]:
    """Apply every pending migration of ``package`` in order; return the names applied."""
    if not package or "/" in package:
        raise ValueError(f"package name must be non-empty and contain no '/', got {package!r}")
    _adopt_legacy_names(con, applied_migrations(con))
    done = set(applied_migrations(con))
    applied = []
    for name, statements in migrations:
        recorded = f"{package}/{name}"
        if recorded not in done:
            _apply(con, recorded, statements, now())
            applied.append(name)
    return applied
