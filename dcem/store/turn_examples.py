"""Reading the few-shot examples stored agent turns showed, as stored JSON text.

A turn's examples are in the call log (the parsed reply of its newest successful
``classify`` call, joined on the turn's cache key, under ``examples``) or, for a run
imported from an export, which has no call log, in the turn row itself
(``examples_json``, the list).  Either source may be missing from a store (no call log,
or a store from before the turn rows' examples column): it then gives no rows.
:mod:`dcem_clinical.informed` parses the texts."""
from __future__ import annotations

from typing import Any, Sequence

import duckdb

from common.db import Database

__all__ = ["ExampleText", "case_example_texts", "runs_example_texts", "run_has_examples"]

ExampleText = tuple[tuple[Any, ...], Any, bool]
"""(run_id, case_id, method, round, agent), the stored JSON text, and whether the list is
wrapped under ``examples`` (a logged call's parsed reply) or is the list itself (a turn row)."""

# the examples a turn's logged call recorded (the newest successful classify call of its key)
_LOGGED = """SELECT t.run_id, t.case_id, t.method, t.round, t.agent, c.parsed_json
             FROM agent_turns t JOIN llm_calls c ON c.cache_key = t.cache_key
             WHERE {where} AND c.purpose = 'classify' AND c.error IS NULL
             QUALIFY row_number() OVER (PARTITION BY t.run_id, t.case_id, t.method, t.round, t.agent
                                        ORDER BY c.created_at DESC) = 1"""
# the examples an imported turn carries itself (run exports keep them; there is no call log)
_CARRIED = """SELECT t.run_id, t.case_id, t.method, t.round, t.agent, t.examples_json FROM agent_turns t
              WHERE {where} AND t.examples_json IS NOT NULL"""
_HAS_EXAMPLES = ("SELECT count(*) FROM (SELECT 1 FROM agent_turns t WHERE t.run_id = ? "
                 "AND t.examples_json IS NOT NULL LIMIT 1)",
                 "SELECT count(*) FROM (SELECT 1 FROM agent_turns t JOIN llm_calls c ON c.cache_key = t.cache_key "
                 "WHERE t.run_id = ? AND c.purpose = 'classify' AND c.error IS NULL "
                 "AND json_array_length(json_extract(c.parsed_json, '$.examples')) > 0 LIMIT 1)")


def _source_rows(cur: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    """The rows of one source of examples; none when the store lacks it (no call log, or a
    store before the turn rows' examples column)."""
    try:
        return cur.execute(sql, params).fetchall()
    except (duckdb.CatalogException, duckdb.BinderException):
        return []


def _example_texts(store: Database, where: str, params: list[Any]) -> list[ExampleText]:
    """The logged sources' rows first, then the carried ones."""
    cur = store.con.cursor()
    return [(tuple(key), text, wrapped) for sql, wrapped in ((_LOGGED, True), (_CARRIED, False))
            for *key, text in _source_rows(cur, sql.format(where=where), params)]


def case_example_texts(store: Database, run_id: str, case_id: str, method: str | None) -> list[ExampleText]:
    """The example texts of a case's turns (of every method when ``method`` is None)."""
    return _example_texts(store, "t.run_id = ? AND t.case_id = ? AND (? IS NULL OR t.method = ?)",
                          [run_id, case_id, method, method])


def runs_example_texts(store: Database, run_ids: Sequence[str]) -> list[ExampleText]:
    """The example texts of every turn of the runs ``run_ids``."""
    return _example_texts(store, "list_contains(?, t.run_id)", [list(run_ids)])


def run_has_examples(store: Database, run_id: str) -> bool:
    """Whether this store holds the few-shot examples of any turn of the run (in its call
    log or in the turn rows); False for a few-shot run imported from an older export."""
    cur = store.con.cursor()
    return any(rows and rows[0][0] for rows in (_source_rows(cur, sql, [run_id]) for sql in _HAS_EXAMPLES))
