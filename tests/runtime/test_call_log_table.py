"""The runtime's own table: the call log's exact columns, its migration and its cache."""
from __future__ import annotations

from pathlib import Path

from common.db import Database
from common.migrations import applied_migrations
from runtime.call_log import CallContext, CallLog, CallRecord, cache_key
from runtime.messages import Message, Role

COLUMNS = ["call_id", "cache_key", "run_id", "case_id", "agent", "round", "purpose", "backend", "model",
           "model_sha256", "messages_json", "options_json", "raw_reply", "parsed_json", "probabilities",
           "prompt_tokens", "completion_tokens", "duration_s", "error", "created_at"]


def _record(key: str, error: str | None = None, raw: str = "B") -> CallRecord:
    return CallRecord(key=key, purpose="classify", backend="scripted", model="m", model_sha256="0" * 64,
                      messages=(Message(Role.USER, "hi"),), options={"temperature": 0.0}, raw=raw,
                      parsed={"label": 1}, probabilities=[0.25, 0.75], prompt_tokens=3, completion_tokens=1,
                      duration_s=0.5, error=error)


def test_call_log_creates_its_table_with_exactly_these_columns(tmp_path: Path) -> None:
    with Database(tmp_path / "c.duckdb") as db:
        CallLog(db)
        cols = [r[0] for r in db.con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'llm_calls' "
            "ORDER BY ordinal_position").fetchall()]
        assert cols == COLUMNS
        assert applied_migrations(db.con) == ["runtime/001_llm_calls"]
        CallLog(db)  # a second log on the same file applies nothing again
        assert applied_migrations(db.con) == ["runtime/001_llm_calls"]


def test_lookup_serves_the_newest_error_free_row(tmp_path: Path) -> None:
    with Database(tmp_path / "c.duckdb") as db:
        log = CallLog(db)
        assert log.lookup("k") is None
        log.record(_record("k", error="boom"), CallContext(run_id="r"))
        assert log.lookup("k") is None and log.count("r") == 1
        log.record(_record("k", raw="C"), CallContext(run_id="r"))
        hit = log.lookup("k")
        assert hit is not None and hit.raw == "C" and hit.parsed == {"label": 1}
        assert hit.probabilities == [0.25, 0.75] and log.count() == 2 and log.count("other") == 0


def test_cache_key_depends_on_fields_and_messages() -> None:
    msgs = [Message(Role.USER, "a")]
    base = cache_key({"purpose": "classify"}, msgs)
    assert base == cache_key({"purpose": "classify"}, list(msgs))
    assert base != cache_key({"purpose": "cues"}, msgs)
    assert base != cache_key({"purpose": "classify"}, [Message(Role.USER, "b")])
