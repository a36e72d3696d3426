"""Model calls shipped between the driver's store and a worker's in-memory store, in process."""
from __future__ import annotations

from pathlib import Path

from common.db import Database
from runtime.call_log import CallContext, CallLog, CallRecord
from runtime.call_shipping import NewCalls, append_calls, logged_calls, memory_log, preload
from runtime.messages import Message, Role


def _record(key: str, error: str | None = None) -> CallRecord:
    return CallRecord(key=key, purpose="classify", backend="scripted", model="m", model_sha256="0" * 64,
                      messages=(Message(Role.USER, f"question {key}"),), options={"temperature": 0.0},
                      raw=f"reply {key}", parsed={"label": 1}, probabilities=[0.25, 0.75], prompt_tokens=3,
                      completion_tokens=1, duration_s=0.5, error=error)


def _driver(path: Path) -> Database:
    db = Database(path)
    log = CallLog(db)
    log.record(_record("a"), CallContext(run_id="r1", case_id="c1"))
    log.record(_record("b", error="boom"), CallContext(run_id="r1", case_id="c2"))
    log.record(_record("c"), CallContext(run_id="r2", case_id="c3"))
    log.record(_record("d"), CallContext(run_id="r3", case_id="c4"))
    return db


def test_logged_calls_are_the_error_free_rows_of_the_runs_or_cases_without_their_messages(tmp_path: Path) -> None:
    with _driver(tmp_path / "d.duckdb") as db:
        by_run = logged_calls(db, run_ids=["r1"])
        assert list(by_run["cache_key"]) == ["a"]
        assert (by_run["messages_json"].iloc[0], by_run["options_json"].iloc[0]) == ("[]", "{}")
        assert by_run["raw_reply"].iloc[0] == "reply a"
        both = logged_calls(db, run_ids=["r1"], case_ids=["c3"])
        assert sorted(both["cache_key"]) == ["a", "c"]
        assert logged_calls(db).empty


def test_a_worker_store_answers_from_the_shipped_rows_and_returns_only_its_new_ones(tmp_path: Path) -> None:
    with _driver(tmp_path / "d.duckdb") as db:
        shipped = logged_calls(db, run_ids=["r1", "r2"])
    worker = memory_log(shipped)
    log = CallLog(worker)
    assert log.count() == 2 and log.lookup("a") is not None and log.lookup("d") is None
    preload(worker, shipped)  # rows it has already are kept once
    assert log.count() == 2
    new = NewCalls(worker)
    assert new.take().empty
    log.record(_record("e"), CallContext(run_id="r1", case_id="c5"))
    log.record(_record("f"), CallContext(run_id="r1", case_id="c6"))
    taken = new.take()
    assert list(taken["cache_key"]) == ["e", "f"] and taken["messages_json"].iloc[0] != "[]"
    assert new.take().empty
    memory_log(None).close()  # nothing shipped: an empty log
    worker.close()


def test_append_calls_adds_the_workers_rows_once(tmp_path: Path) -> None:
    worker = memory_log(None)
    new = NewCalls(worker)
    CallLog(worker).record(_record("e"), CallContext(run_id="r1", case_id="c5"))
    taken = new.take()
    with _driver(tmp_path / "d.duckdb") as db:
        log = CallLog(db)
        assert append_calls(db, None) == 0 and append_calls(db, taken.iloc[0:0]) == 0
        assert append_calls(db, taken) == 1 and log.count("r1") == 3
        hit = log.lookup("e")
        assert hit is not None and hit.raw == "reply e"
        append_calls(db, taken)  # the same rows again add nothing
        assert log.count("r1") == 3 and log.count() == 5
    worker.close()
