"""The model runtime's table: the append-only call log (see :mod:`runtime.call_log`)."""
from __future__ import annotations

from common.migrations import Migration

__all__ = ["PACKAGE", "MIGRATIONS"]

_M001 = [
    """CREATE TABLE llm_calls (
        call_id VARCHAR PRIMARY KEY,
        cache_key VARCHAR NOT NULL,
        run_id VARCHAR,
        case_id VARCHAR,
        agent INTEGER,
        round INTEGER,
        purpose VARCHAR NOT NULL,
        backend VARCHAR NOT NULL,
        model VARCHAR NOT NULL,
        model_sha256 VARCHAR NOT NULL,
        messages_json VARCHAR NOT NULL,
        options_json VARCHAR NOT NULL,
        raw_reply VARCHAR,
        parsed_json VARCHAR,
        probabilities DOUBLE[],
        prompt_tokens INTEGER,
        completion_tokens INTEGER,
        duration_s DOUBLE,
        error VARCHAR,
        created_at TIMESTAMP NOT NULL
    )""",
    "CREATE INDEX llm_calls_cache_key ON llm_calls (cache_key)",
]

PACKAGE = "runtime"
MIGRATIONS: list[Migration] = [("001_llm_calls", _M001)]
