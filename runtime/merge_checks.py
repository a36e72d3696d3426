"""What a row of the call log may hold when another store file is merged in
(:func:`common.store_merge.merge_store`; the rules' form is :mod:`common.merge_checks`).

A logged call answers every repeated call with the same cache key, so a bad row merged in
would answer later runs.  A merged call has a sha256 cache key, JSON messages and options
(and parsed reply), non-negative token counts, agent and round, a finite non-negative
duration, probabilities finite in [0, 1] with positive total when the call succeeded,
and it belongs to a run the merged store holds (when it names one): the run tables are
named by the command that merges, since the call log serves several packages' runs.
"""
from __future__ import annotations

from typing import Sequence

from common.merge_checks import RowCheck, counts, json_text, number, numbers

__all__ = ["call_log_checks"]


def _orphan(run_tables: Sequence[str]) -> RowCheck:
    def bad(tables: frozenset[str]) -> str:
        present = [t for t in run_tables if t in tables]
        found = " OR ".join(f"EXISTS (SELECT 1 FROM {{{t}}} p WHERE p.run_id = r.run_id)" for t in present)
        return f"r.run_id IS NOT NULL AND NOT ({found})" if found else "r.run_id IS NOT NULL"
    return RowCheck("llm_calls", "run_id", bad, "must name a run the store holds (in the target or among the "
                    "merged rows), or be empty")


def call_log_checks(run_tables: Sequence[str]) -> tuple[RowCheck, ...]:
    """The call log's rules; ``run_tables`` are the tables (keyed by ``run_id``) whose runs
    a logged call may belong to."""
    return (
        RowCheck("llm_calls", "cache_key", "NOT regexp_full_match(r.cache_key, '[0-9a-f]{64}')",
                 "must be a sha256 in hex"),
        RowCheck("llm_calls", "call_id", "r.call_id = ''", "must not be empty"),
        *counts("llm_calls", "agent", "round", "prompt_tokens", "completion_tokens", nullable=True),
        number("llm_calls", "duration_s", nullable=True),
        json_text("llm_calls", "messages_json"),
        json_text("llm_calls", "options_json"),
        json_text("llm_calls", "parsed_json", nullable=True),
        numbers("llm_calls", "probabilities", 0.0, 1.0, nullable=True),
        RowCheck("llm_calls", "probabilities", "r.error IS NULL AND len(r.probabilities) > 0 AND "
                 "NOT (list_sum(r.probabilities) > 0)", "must have a positive total in a call that succeeded"),
        _orphan(run_tables),
    )
